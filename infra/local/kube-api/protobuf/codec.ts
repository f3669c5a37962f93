/**
 * Kubernetes protobuf, both ways, driven by the message table of `schema.ts`: JSON objects (as the emulator
 * stores them) ↔ protobuf messages, the `k8s\0` + `runtime.Unknown` envelope, and the watch stream frames.
 * The wire primitives are `@bufbuild/protobuf`'s.
 *
 * JSON ↔ protobuf follows what Go does between the two (apimachinery's protobuf serializer decodes into the
 * Go struct, encoding/json writes it): a value field with `omitempty` that arrives as its zero is absent in
 * JSON, a pointer keeps its zero, `metav1.Time` zero is `null`; map entries and list elements are kept as
 * they are. Encoding writes what the JSON has. Fields the table does not know are skipped both ways (as an
 * unknown protobuf field is, and as Go's JSON decoding drops an unknown JSON field).
 *
 * @example
 * const bytes = encodeObject({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'x' } });
 * decodeObject(bytes); // { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'x' } }
 */
import { BinaryReader, BinaryWriter, WireType } from '@bufbuild/protobuf/wire';
import { MESSAGES } from './schema.ts';

/** The protobuf media type of the API (`runtime.ContentTypeProtobuf`). */
export const PROTOBUF_MEDIA_TYPE = 'application/vnd.kubernetes.protobuf';

/** The four bytes every enveloped message starts with (`k8s\0`). */
export const PROTOBUF_MAGIC = Uint8Array.of(0x6b, 0x38, 0x73, 0x00);

/** Raised when bytes are not a message the table can read (becomes a 400 at the HTTP layer). */
export class ProtobufDecodeError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'ProtobufDecodeError';
  }
}

const SCALARS = new Set(['string', 'int32', 'int64', 'bool', 'double', 'bytes']);
const SPECIALS = new Set(['Time', 'MicroTime', 'Quantity', 'IntOrString', 'FieldsV1', 'RawExtension']);

interface FieldDef {
  json: string;
  no: number;
  type: string;
  category: 'scalar' | 'special' | 'message';
  repeated: boolean;
  map: boolean;
  /** `?` pointer, `!` value without omitempty, '' value with omitempty. */
  flag: '' | '?' | '!';
  inline: boolean;
}

interface MessageDef {
  name: string;
  fields: FieldDef[];
  byNumber: Map<number, FieldDef>;
  /** A named Go slice: the JSON form is the `items` array. */
  slice: boolean;
}

const compiled = new Map<string, MessageDef>();

/** The parsed definition of a message; throws for a name the table lacks. */
function messageDef(name: string): MessageDef {
  let def = compiled.get(name);
  if (def) return def;
  let text = MESSAGES[name];
  if (text === undefined) throw new Error(`protobuf: no message ${name}`);
  const slice = text.startsWith('=');
  if (slice) text = text.slice(1);
  const fields: FieldDef[] = [];
  for (const token of text.split(' ').filter(Boolean)) {
    const m = /^([\w.]+):(\d+):(\[\]|\{\})?([\w.]+)([?!]?)$/.exec(token);
    if (!m) throw new Error(`protobuf: bad field ${token} in ${name}`);
    const type = m[4];
    const category = SCALARS.has(type) ? 'scalar' : SPECIALS.has(type) ? 'special' : 'message';
    if (category === 'message' && MESSAGES[type] === undefined) throw new Error(`protobuf: ${name}.${m[1]} refers to unknown ${type}`);
    fields.push({
      json: m[1], no: Number(m[2]), type, category, repeated: m[3] === '[]', map: m[3] === '{}',
      flag: m[5] as FieldDef['flag'], inline: m[1] === '...',
    });
  }
  def = { name, fields, byNumber: new Map(fields.map((f) => [f.no, f])), slice };
  compiled.set(name, def);
  return def;
}

/** True when the table has the message. */
export function hasMessage(name: string): boolean {
  return MESSAGES[name] !== undefined;
}

// ---- encoding ------------------------------------------------------------------------------------

const textEncoder = new TextEncoder();
const textDecoder = new TextDecoder();

/** RFC 3339 → seconds and nanoseconds (the fraction is kept to the nanosecond, as Go parses it). */
function parseTime(value: unknown): { seconds: number; nanos: number } | undefined {
  if (typeof value !== 'string' || value === '') return undefined;
  const m = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})(?:\.(\d{1,9}))?(Z|[+-]\d{2}:\d{2})$/i.exec(value);
  if (!m) {
    const ms = Date.parse(value);
    return Number.isNaN(ms) ? undefined : { seconds: Math.floor(ms / 1000), nanos: (ms % 1000) * 1e6 };
  }
  const seconds = Math.floor(Date.parse(`${m[1]}${m[3].toUpperCase()}`) / 1000);
  return { seconds, nanos: m[2] ? Number(m[2].padEnd(9, '0')) : 0 };
}

function writeScalar(w: BinaryWriter, type: string, value: unknown): void {
  switch (type) {
    case 'string': w.string(typeof value === 'string' ? value : String(value)); break;
    case 'int32': w.int32(Number(value)); break;
    case 'int64': w.int64(Math.trunc(Number(value))); break;
    case 'bool': w.bool(value === true); break;
    case 'double': w.double(Number(value)); break;
    case 'bytes': w.bytes(value instanceof Uint8Array ? value : Buffer.from(String(value), 'base64')); break;
  }
}

function wireTypeOf(f: Pick<FieldDef, 'category' | 'type'>): WireType {
  if (f.category !== 'scalar') return WireType.LengthDelimited;
  if (f.type === 'string' || f.type === 'bytes') return WireType.LengthDelimited;
  if (f.type === 'double') return WireType.Bit64;
  return WireType.Varint;
}

function writeSpecial(w: BinaryWriter, type: string, value: unknown): void {
  switch (type) {
    case 'Time':
    case 'MicroTime': {
      const t = parseTime(value);
      if (t?.seconds) w.tag(1, WireType.Varint).int64(t.seconds);
      if (t?.nanos) w.tag(2, WireType.Varint).int32(t.nanos);
      break;
    }
    case 'Quantity':
      w.tag(1, WireType.LengthDelimited).string(String(value));
      break;
    case 'IntOrString':
      if (typeof value === 'number') w.tag(1, WireType.Varint).int64(0).tag(2, WireType.Varint).int32(value);
      else w.tag(1, WireType.Varint).int64(1).tag(3, WireType.LengthDelimited).string(String(value));
      break;
    case 'FieldsV1':
    case 'RawExtension':
      w.tag(1, WireType.LengthDelimited).bytes(value instanceof Uint8Array ? value : textEncoder.encode(JSON.stringify(value)));
      break;
  }
}

/** Writes one value of field `f` (one list element, one map value, or the field's value) as field `no`. */
/** Whether a JSON value can be written as a scalar of `type` (a stored object may hold anything). */
function fitsScalar(type: string, value: unknown): boolean {
  switch (type) {
    case 'string': return typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean';
    case 'bool': return typeof value === 'boolean';
    case 'bytes': return typeof value === 'string' || value instanceof Uint8Array;
    case 'int32': return Number.isInteger(Number(value)) && Math.abs(Number(value)) < 2 ** 31 && value !== '' && typeof value !== 'boolean';
    default: return Number.isFinite(Number(value)) && value !== '' && typeof value !== 'boolean';
  }
}

function writeValue(w: BinaryWriter, f: FieldDef, no: number, value: unknown): void {
  if (f.category === 'scalar') {
    // a value of the wrong JSON type cannot be written: it is left out, as an unknown field would be
    if (!fitsScalar(f.type, value)) return;
    w.tag(no, wireTypeOf(f));
    writeScalar(w, f.type, value);
    return;
  }
  w.tag(no, WireType.LengthDelimited).fork();
  if (f.category === 'special') writeSpecial(w, f.type, value);
  else writeMessage(w, messageDef(f.type), value);
  w.join();
}

function writeMessage(w: BinaryWriter, def: MessageDef, value: unknown): void {
  if (def.slice) {
    for (const item of Array.isArray(value) ? value : []) writeValue(w, def.fields[0], def.fields[0].no, item);
    return;
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return;
  const obj = value as Record<string, unknown>;
  for (const f of def.fields) {
    if (f.inline) {
      w.tag(f.no, WireType.LengthDelimited).fork();
      writeMessage(w, messageDef(f.type), obj);
      w.join();
      continue;
    }
    const v = obj[f.json];
    if (v === undefined) continue;
    if (v === null) {
      // a zero metav1.Time value field is written (empty) and reads back as null, as Go round-trips it
      if ((f.type === 'Time' || f.type === 'MicroTime') && f.flag !== '?' && !f.repeated && !f.map) w.tag(f.no, WireType.LengthDelimited).bytes(new Uint8Array());
      continue;
    }
    if (f.map) {
      if (typeof v !== 'object' || Array.isArray(v)) continue;
      for (const [key, item] of Object.entries(v as Record<string, unknown>)) {
        if (item === undefined || item === null) continue;
        w.tag(f.no, WireType.LengthDelimited).fork();
        w.tag(1, WireType.LengthDelimited).string(key);
        writeValue(w, f, 2, item);
        w.join();
      }
    } else if (f.repeated) {
      if (!Array.isArray(v)) continue;
      for (const item of v) if (item !== null && item !== undefined) writeValue(w, f, f.no, item);
    } else {
      writeValue(w, f, f.no, v);
    }
  }
}

/** Encodes a JSON object as the message `name` (no envelope). */
export function encodeMessage(name: string, value: unknown): Uint8Array {
  const w = new BinaryWriter();
  writeMessage(w, messageDef(name), value);
  return w.finish();
}

// ---- decoding ------------------------------------------------------------------------------------

const num = (v: bigint | string): number => Number(v);

function readScalar(r: BinaryReader, type: string, wireType: WireType): unknown {
  switch (type) {
    case 'string': return r.string();
    case 'int32': return r.int32();
    case 'int64': return num(r.int64());
    case 'bool': return r.bool();
    case 'double': return wireType === WireType.Bit32 ? r.float() : r.double();
    case 'bytes': return Buffer.from(r.bytes()).toString('base64');
  }
  return undefined;
}

const pad = (n: number, width: number): string => String(n).padStart(width, '0');

/** `metav1.Time` / `MicroTime` as Go marshals them (UTC; seconds, or 6 fractional digits). */
function formatTime(seconds: number, nanos: number, micro: boolean): string | null {
  if (seconds === 0 && nanos === 0) return null;
  const iso = new Date(seconds * 1000).toISOString().slice(0, 19);
  return micro ? `${iso}.${pad(Math.floor(nanos / 1000), 6)}Z` : `${iso}Z`;
}

function readSpecial(bytes: Uint8Array, type: string): unknown {
  const r = new BinaryReader(bytes);
  let seconds = 0;
  let nanos = 0;
  let kind = 0;
  let intVal = 0;
  let strVal = '';
  let text = '';
  let raw: Uint8Array | undefined;
  while (r.pos < r.len) {
    const [no, wt] = r.tag();
    if ((type === 'Time' || type === 'MicroTime') && no === 1 && wt === WireType.Varint) seconds = num(r.int64());
    else if ((type === 'Time' || type === 'MicroTime') && no === 2 && wt === WireType.Varint) nanos = r.int32();
    else if (type === 'Quantity' && no === 1 && wt === WireType.LengthDelimited) text = r.string();
    else if (type === 'IntOrString' && no === 1 && wt === WireType.Varint) kind = num(r.int64());
    else if (type === 'IntOrString' && no === 2 && wt === WireType.Varint) intVal = r.int32();
    else if (type === 'IntOrString' && no === 3 && wt === WireType.LengthDelimited) strVal = r.string();
    else if ((type === 'FieldsV1' || type === 'RawExtension') && no === 1 && wt === WireType.LengthDelimited) raw = r.bytes();
    else r.skip(wt, no);
  }
  switch (type) {
    case 'Time': return formatTime(seconds, nanos, false);
    case 'MicroTime': return formatTime(seconds, nanos, true);
    case 'Quantity': return text;
    case 'IntOrString': return kind === 1 ? strVal : intVal;
    default: {
      if (!raw || raw.length === 0) return null;
      try {
        return JSON.parse(textDecoder.decode(raw));
      } catch (err) {
        throw new ProtobufDecodeError(`${type} does not hold JSON`, { cause: err });
      }
    }
  }
}

/** Reads one value of field `f` whose tag was just read. */
function readValue(r: BinaryReader, f: FieldDef, wireType: WireType): unknown {
  if (f.category === 'scalar') {
    if (wireType !== wireTypeOf(f) && !(f.type === 'double' && wireType === WireType.Bit32)) {
      throw new ProtobufDecodeError(`field ${f.json} (${f.no}) has wire type ${wireType}, expected ${wireTypeOf(f)}`);
    }
    return readScalar(r, f.type, wireType);
  }
  if (wireType !== WireType.LengthDelimited) throw new ProtobufDecodeError(`field ${f.json} (${f.no}) is not length-delimited`);
  const bytes = r.bytes();
  if (f.category === 'special') return readSpecial(bytes, f.type);
  return decodeInto(messageDef(f.type), bytes);
}

function zeroOf(type: string): unknown {
  switch (type) {
    case 'string': return '';
    case 'bool': return false;
    case 'bytes': return '';
    case 'Quantity': return '';
    case 'Time': case 'MicroTime': case 'FieldsV1': case 'RawExtension': return null;
    default: return SCALARS.has(type) || type === 'IntOrString' ? 0 : {};
  }
}

function isZero(value: unknown): boolean {
  return value === '' || value === 0 || value === false || value === null;
}

function decodeInto(def: MessageDef, bytes: Uint8Array, target: Record<string, unknown> = {}): any {
  const r = new BinaryReader(bytes);
  const seen = new Set<FieldDef>();
  if (def.slice) {
    const items: unknown[] = [];
    const f = def.fields[0];
    while (r.pos < r.len) {
      const [no, wt] = r.tag();
      if (no === f.no) items.push(readValue(r, f, wt));
      else r.skip(wt, no);
    }
    return items;
  }
  while (r.pos < r.len) {
    let no: number;
    let wt: WireType;
    try {
      [no, wt] = r.tag();
    } catch (err) {
      throw new ProtobufDecodeError(`${def.name}: ${(err as Error).message}`, { cause: err });
    }
    const f = def.byNumber.get(no);
    if (!f) {
      r.skip(wt, no);
      continue;
    }
    if (f.inline) {
      if (wt !== WireType.LengthDelimited) throw new ProtobufDecodeError(`${def.name}: embedded field ${no} is not length-delimited`);
      decodeInto(messageDef(f.type), r.bytes(), target);
      continue;
    }
    if (f.map) {
      if (wt !== WireType.LengthDelimited) throw new ProtobufDecodeError(`${def.name}.${f.json}: map entry is not length-delimited`);
      const entry = new BinaryReader(r.bytes());
      let key = '';
      let value: unknown;
      while (entry.pos < entry.len) {
        const [eno, ewt] = entry.tag();
        if (eno === 1) key = entry.string();
        else if (eno === 2) value = readValue(entry, f, ewt);
        else entry.skip(ewt, eno);
      }
      const map = (target[f.json] ??= {}) as Record<string, unknown>;
      map[key] = value === undefined ? zeroOf(f.type) : value;
      continue;
    }
    if (f.repeated) {
      const list = (target[f.json] ??= []) as unknown[];
      if (f.category === 'scalar' && wt === WireType.LengthDelimited && wireTypeOf(f) !== WireType.LengthDelimited) {
        const packed = new BinaryReader(r.bytes());
        while (packed.pos < packed.len) list.push(readScalar(packed, f.type, wireTypeOf(f)));
      } else {
        list.push(readValue(r, f, wt));
      }
      continue;
    }
    target[f.json] = readValue(r, f, wt);
    seen.add(f);
  }
  // Go's JSON of the decoded struct: an omitempty value at its zero is not written
  for (const f of seen) {
    const v = target[f.json];
    if (f.category === 'scalar' && f.flag === '' && isZero(v)) delete target[f.json];
    else if ((f.type === 'IntOrString' || f.type === 'Quantity') && f.flag === '' && isZero(v)) delete target[f.json];
  }
  return target;
}

/** Decodes the message `name` (no envelope) into its JSON form. */
export function decodeMessage(name: string, bytes: Uint8Array): any {
  try {
    return decodeInto(messageDef(name), bytes);
  } catch (err) {
    if (err instanceof ProtobufDecodeError) throw err;
    throw new ProtobufDecodeError(`${name}: ${(err as Error).message}`, { cause: err });
  }
}

// ---- kinds, envelope, watch frames ---------------------------------------------------------------

/** The table's package of each API group. */
const PACKAGE_OF_GROUP: Record<string, string> = {
  '': 'core',
  apps: 'apps',
  'rbac.authorization.k8s.io': 'rbac',
  'authentication.k8s.io': 'authn',
  'authorization.k8s.io': 'authz',
  'storage.k8s.io': 'storage',
  'coordination.k8s.io': 'coord',
  'events.k8s.io': 'events',
  'meta.k8s.io': 'meta',
};

/** Kinds every group version has (`metav1.AddToGroupVersion`): Status, DeleteOptions, WatchEvent. */
const META_KINDS = new Set(['Status', 'DeleteOptions', 'WatchEvent']);

/** The message of an `apiVersion` + `kind`, or undefined when it has none (not served, or JSON-only like Table). */
export function messageFor(apiVersion: string, kind: string): string | undefined {
  const group = apiVersion.includes('/') ? apiVersion.slice(0, apiVersion.indexOf('/')) : '';
  const version = apiVersion.includes('/') ? apiVersion.slice(apiVersion.indexOf('/') + 1) : apiVersion;
  if (version !== 'v1') return undefined;
  if (META_KINDS.has(kind)) return `meta.${kind}`;
  const pkg = PACKAGE_OF_GROUP[group];
  const name = pkg && `${pkg}.${kind}`;
  return name && hasMessage(name) ? name : undefined;
}

/** The `runtime.Unknown` of an enveloped message. */
export interface Envelope {
  apiVersion: string;
  kind: string;
  raw: Uint8Array;
  contentEncoding: string;
  contentType: string;
}

/** `k8s\0` + `runtime.Unknown{typeMeta, raw, contentEncoding, contentType}` (apimachinery `protobuf.Serializer`). */
export function encodeEnvelope(apiVersion: string, kind: string, raw: Uint8Array): Uint8Array {
  const w = new BinaryWriter();
  w.raw(PROTOBUF_MAGIC);
  w.tag(1, WireType.LengthDelimited).fork()
    .tag(1, WireType.LengthDelimited).string(apiVersion)
    .tag(2, WireType.LengthDelimited).string(kind)
    .join();
  w.tag(2, WireType.LengthDelimited).bytes(raw);
  w.tag(3, WireType.LengthDelimited).string('');
  w.tag(4, WireType.LengthDelimited).string('');
  return w.finish();
}

/** Reads the envelope; throws {@link ProtobufDecodeError} without the magic. */
export function decodeEnvelope(bytes: Uint8Array): Envelope {
  if (bytes.length < 4 || !PROTOBUF_MAGIC.every((b, i) => bytes[i] === b)) {
    throw new ProtobufDecodeError('provided data does not appear to be a protobuf message, expected prefix [107 56 115 0]');
  }
  const u = decodeMessage('runtime.Unknown', bytes.subarray(4));
  return {
    apiVersion: u.typeMeta?.apiVersion ?? '',
    kind: u.typeMeta?.kind ?? '',
    raw: Buffer.from(u.raw ?? '', 'base64'),
    contentEncoding: u.contentEncoding ?? '',
    contentType: u.contentType ?? '',
  };
}

/** An object with `apiVersion` and `kind` → enveloped protobuf. Throws when the kind has no message. */
export function encodeObject(obj: { apiVersion?: string; kind?: string; [k: string]: unknown }): Uint8Array {
  const apiVersion = String(obj.apiVersion ?? '');
  const kind = String(obj.kind ?? '');
  const name = messageFor(apiVersion, kind);
  if (!name) throw new Error(`protobuf: no message for ${apiVersion}, Kind=${kind}`);
  return encodeEnvelope(apiVersion, kind, encodeMessage(name, obj));
}

/** Enveloped protobuf → the object, with `apiVersion` and `kind` from the envelope. */
export function decodeObject(bytes: Uint8Array): any {
  const env = decodeEnvelope(bytes);
  if (env.contentEncoding) throw new ProtobufDecodeError(`unsupported content encoding ${JSON.stringify(env.contentEncoding)}`);
  const name = messageFor(env.apiVersion, env.kind);
  if (!name) throw new ProtobufDecodeError(`no kind "${env.kind}" is registered for version "${env.apiVersion}"`);
  return { apiVersion: env.apiVersion, kind: env.kind, ...decodeMessage(name, env.raw) };
}

/**
 * A list: `{kind: <X>List, apiVersion, metadata: ListMeta, items}` where the items' own `kind`/`apiVersion`
 * are not part of the message (the envelope carries the list's).
 */
export function encodeList(apiVersion: string, listKind: string, metadata: Record<string, unknown>, items: readonly unknown[]): Uint8Array {
  const name = messageFor(apiVersion, listKind);
  if (!name) throw new Error(`protobuf: no message for ${apiVersion}, Kind=${listKind}`);
  return encodeEnvelope(apiVersion, listKind, encodeMessage(name, { metadata, items }));
}

/**
 * One frame of a protobuf watch stream (`application/vnd.kubernetes.protobuf;stream=watch`): a 4-byte
 * big-endian length, then `metav1.WatchEvent{type, object: RawExtension{raw: <enveloped object>}}`
 * (client-go `framer.NewLengthDelimitedFrameReader`, apiserver's raw protobuf stream serializer).
 */
export function watchFrame(type: string, enveloped: Uint8Array): Buffer {
  const w = new BinaryWriter();
  w.tag(1, WireType.LengthDelimited).string(type);
  w.tag(2, WireType.LengthDelimited).fork().tag(1, WireType.LengthDelimited).bytes(enveloped).join();
  const body = w.finish();
  const frame = Buffer.allocUnsafe(4 + body.length);
  frame.writeUInt32BE(body.length, 0);
  frame.set(body, 4);
  return frame;
}

/** Splits a protobuf watch stream into `{type, object}` events (what client-go's decoder yields). */
export function readWatchFrames(stream: Uint8Array): Array<{ type: string; object: any }> {
  const out: Array<{ type: string; object: any }> = [];
  let at = 0;
  const view = Buffer.from(stream.buffer, stream.byteOffset, stream.byteLength);
  while (at + 4 <= view.length) {
    const length = view.readUInt32BE(at);
    if (at + 4 + length > view.length) break;
    const r = new BinaryReader(view.subarray(at + 4, at + 4 + length));
    let type = '';
    let raw: Uint8Array = new Uint8Array();
    while (r.pos < r.len) {
      const [no, wt] = r.tag();
      if (no === 1) type = r.string();
      else if (no === 2) {
        const ext = new BinaryReader(r.bytes());
        while (ext.pos < ext.len) {
          const [eno, ewt] = ext.tag();
          if (eno === 1) raw = ext.bytes(); else ext.skip(ewt, eno);
        }
      } else r.skip(wt, no);
    }
    out.push({ type, object: decodeObject(raw) });
    at += 4 + length;
  }
  return out;
}
