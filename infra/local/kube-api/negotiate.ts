/**
 * Content negotiation as the apiserver does it (`apiserver/pkg/endpoints/handlers/negotiation`,
 * `RequestScope.AllowsMediaTypeTransform`): the Accept header's media ranges in order of their q-value
 * (then concrete before wildcard, then as written), the first one the endpoint can serve wins; `*∕*` and `application/*` mean the default
 * (JSON); a `;as=Table;g=meta.k8s.io;v=v1|v1beta1` range is served only as JSON or YAML and only where the
 * endpoint prints tables; other `as=` conversions are not served here and are skipped; nothing acceptable is
 * 406. Request bodies are decoded by Content-Type: JSON, YAML, and protobuf for kinds that have a message —
 * anything else is 415.
 */
import { StatusError } from './types.ts';
import { PROTOBUF_MEDIA_TYPE } from './protobuf/codec.ts';

export const JSON_MEDIA_TYPE = 'application/json';
export const YAML_MEDIA_TYPE = 'application/yaml';

/** One range of an Accept header. */
export interface MediaRange {
  type: string;
  subtype: string;
  params: Record<string, string>;
  q: number;
}

/** What a response is written as. */
export type OutputFormat = 'json' | 'yaml' | 'protobuf' | 'table';

/** Parses an Accept header; ranges with q=0 are dropped; sorted by q, then specificity, then as written. */
export function parseAccept(header: string | undefined): MediaRange[] {
  if (!header || !header.trim()) return [];
  const ranges: Array<MediaRange & { index: number }> = [];
  header.split(',').forEach((part, index) => {
    const [mime, ...rawParams] = part.split(';').map((s) => s.trim());
    if (!mime) return;
    const [type, subtype = ''] = mime.toLowerCase().split('/');
    const params: Record<string, string> = {};
    let q = 1;
    for (const p of rawParams) {
      const eq = p.indexOf('=');
      if (eq < 0) continue;
      const key = p.slice(0, eq).trim().toLowerCase();
      const value = p.slice(eq + 1).trim().replace(/^"(.*)"$/, '$1');
      if (key === 'q') q = Number(value);
      else params[key] = value;
    }
    if (!Number.isFinite(q) || q <= 0) return;
    ranges.push({ type, subtype, params, q, index });
  });
  // goautoneg's order: higher q first, then a concrete type before `*`, a concrete subtype before `*`
  const wild = (r: MediaRange): number => (r.type === '*' ? 2 : 0) + (r.subtype === '*' ? 1 : 0);
  ranges.sort((a, b) => b.q - a.q || wild(a) - wild(b) || a.index - b.index);
  return ranges.map(({ index: _i, ...r }) => r);
}

/** What the endpoint can answer with. */
export interface Offer {
  /** The kind has a protobuf message (built-in kinds; not CRD-like ones). */
  protobuf: boolean;
  /** The endpoint prints Tables (get and list of a resource). */
  table: boolean;
  /** A watch: YAML has no stream form. */
  watch?: boolean;
}

/** The media types an endpoint accepts, for 406/415 messages. */
export function acceptedTypes(protobuf: boolean): string[] {
  return protobuf ? [JSON_MEDIA_TYPE, YAML_MEDIA_TYPE, PROTOBUF_MEDIA_TYPE] : [JSON_MEDIA_TYPE, YAML_MEDIA_TYPE];
}

/** 406 NotAcceptable (`negotiation.NewNotAcceptableError`). */
export function notAcceptable(protobuf: boolean): StatusError {
  return new StatusError(406, 'NotAcceptable', `only the following media types are accepted: ${acceptedTypes(protobuf).join(', ')}`);
}

function isTableRange(r: MediaRange): boolean {
  return r.params.as === 'Table' && r.params.g === 'meta.k8s.io' && (r.params.v === 'v1' || r.params.v === 'v1beta1');
}

/** Picks the output format for a request's Accept header; throws 406 when none fits. */
export function negotiateOutput(accept: string | undefined, offer: Offer): OutputFormat {
  const ranges = parseAccept(accept);
  if (ranges.length === 0) return 'json';
  for (const r of ranges) {
    if (r.params.as !== undefined) {
      if (isTableRange(r) && offer.table && r.type === 'application' && r.subtype === 'json') return 'table';
      continue;
    }
    if ((r.type === '*' && r.subtype === '*') || (r.type === 'application' && r.subtype === '*')) return 'json';
    if (r.type !== 'application') continue;
    if (r.subtype === 'json') return 'json';
    if (r.subtype === 'yaml' && !offer.watch) return 'yaml';
    if (r.subtype === 'vnd.kubernetes.protobuf' && offer.protobuf) return 'protobuf';
  }
  throw notAcceptable(offer.protobuf);
}

/** How a request body is to be decoded. */
export type BodyFormat = 'json' | 'yaml' | 'protobuf';

/** The body format of a Content-Type; 415 for a type this endpoint cannot decode. */
export function bodyFormatOf(contentType: string | undefined, protobuf: boolean): BodyFormat {
  const type = (contentType ?? JSON_MEDIA_TYPE).split(';')[0].trim().toLowerCase();
  if (type === JSON_MEDIA_TYPE || type === '' || type === '*/*') return 'json';
  if (type === YAML_MEDIA_TYPE || type === 'application/x-yaml' || type === 'text/yaml') return 'yaml';
  if (type === PROTOBUF_MEDIA_TYPE && protobuf) return 'protobuf';
  throw new StatusError(415, 'UnsupportedMediaType',
    `the body of the request was in an unknown format - accepted media types include: ${acceptedTypes(protobuf).join(', ')}`);
}
