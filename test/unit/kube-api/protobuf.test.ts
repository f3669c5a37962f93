// Kubernetes protobuf in the emulator: every served kind round-trips JSON → protobuf → JSON unchanged; the
// envelope, watch frames and Go's JSON view of decoded messages; Accept/Content-Type negotiation.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { BinaryWriter, WireType } from '@bufbuild/protobuf/wire';
import { KINDS } from '../../../infra/local/kube-api/kinds/index.ts';
import { apiVersionOf } from '../../../infra/local/kube-api/store.ts';
import {
  decodeEnvelope, decodeMessage, decodeObject, encodeEnvelope, encodeList, encodeMessage, encodeObject, messageFor,
  ProtobufDecodeError, readWatchFrames, watchFrame,
} from '../../../infra/local/kube-api/protobuf/codec.ts';
import { MESSAGES } from '../../../infra/local/kube-api/protobuf/schema.ts';
import { bodyFormatOf, negotiateOutput, parseAccept } from '../../../infra/local/kube-api/negotiate.ts';
import { StatusError } from '../../../infra/local/kube-api/types.ts';
import { FIXTURES, OTHER_MESSAGES } from './protobuf-fixtures.ts';

const hex = (b: Uint8Array): string => Buffer.from(b).toString('hex');

describe('protobuf codec', () => {
  it('every served kind has a message, a list message and a fixture', () => {
    for (const spec of KINDS) {
      const apiVersion = apiVersionOf(spec);
      assert.ok(messageFor(apiVersion, spec.kind), `${apiVersion} ${spec.kind}`);
      assert.ok(messageFor(apiVersion, `${spec.kind}List`), `${apiVersion} ${spec.kind}List`);
      assert.ok(FIXTURES.some((f) => f.apiVersion === apiVersion && f.kind === spec.kind), `fixture for ${apiVersion} ${spec.kind}`);
    }
  });

  it('the message table is consistent: unique field numbers, every referenced message defined', () => {
    for (const [name, text] of Object.entries(MESSAGES)) {
      const fields = text.replace(/^=/, '').split(' ').filter(Boolean);
      const numbers = fields.map((f) => f.split(':')[1]);
      assert.equal(new Set(numbers).size, numbers.length, `${name}: duplicate field numbers`);
      assert.doesNotThrow(() => encodeMessage(name, {}), name);
    }
  });

  for (const fixture of [...FIXTURES, ...OTHER_MESSAGES]) {
    it(`${fixture.apiVersion} ${fixture.kind} ${(fixture as any).metadata?.name ?? ''}: JSON → protobuf → JSON unchanged`, () => {
      const bytes = encodeObject(fixture as any);
      assert.deepEqual(decodeObject(bytes), fixture);
    });
  }

  it('lists round-trip: ListMeta and items (items carry no kind/apiVersion)', () => {
    for (const spec of KINDS) {
      const apiVersion = apiVersionOf(spec);
      const items = FIXTURES.filter((f) => f.apiVersion === apiVersion && f.kind === spec.kind).map(({ kind: _k, apiVersion: _a, ...rest }) => rest);
      const metadata = { resourceVersion: '77', continue: 'eyJ2IjoibWV0YS5rOHMuaW8vdjEifQ', remainingItemCount: 0 };
      const decoded = decodeObject(encodeList(apiVersion, `${spec.kind}List`, metadata, items));
      assert.deepEqual(decoded, { apiVersion, kind: `${spec.kind}List`, metadata, items });
    }
  });

  it('the envelope: k8s\\0 + runtime.Unknown{typeMeta{apiVersion, kind}, raw, contentEncoding, contentType}', () => {
    const bytes = encodeObject({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'x' } });
    // 6b387300 magic; 0a0f typeMeta{0a02 "v1", 1209 "Namespace"}; 1205 raw{0a03 metadata{0a01 "x"}}; 1a00; 2200
    assert.equal(hex(bytes), `6b387300 0a0f 0a02${hex(Buffer.from('v1'))} 1209${hex(Buffer.from('Namespace'))} 1205 0a03 0a01 78 1a00 2200`.replaceAll(' ', ''));
    const env = decodeEnvelope(bytes);
    assert.deepEqual({ ...env, raw: hex(env.raw) }, { apiVersion: 'v1', kind: 'Namespace', raw: '0a030a0178', contentEncoding: '', contentType: '' });
    assert.throws(() => decodeEnvelope(Buffer.from('{"kind":"Namespace"}')), ProtobufDecodeError);
    assert.throws(() => decodeObject(encodeEnvelope('v1', 'Frobnicator', new Uint8Array())), /no kind "Frobnicator" is registered/);
  });

  it('decodes as Go sees a message from a Go client: omitempty zeros absent, pointers and non-omitempty zeros kept, zero Time null', () => {
    // what client-go writes for `kubectl create serviceaccount x`: every value field, zero or not
    const w = new BinaryWriter();
    w.tag(1, WireType.LengthDelimited).fork()
      .tag(1, WireType.LengthDelimited).string('x')
      .tag(2, WireType.LengthDelimited).string('')
      .tag(3, WireType.LengthDelimited).string('')
      .tag(7, WireType.Varint).int64(0)
      .tag(8, WireType.LengthDelimited).bytes(new Uint8Array())
      .join();
    w.tag(4, WireType.Varint).bool(false); // automountServiceAccountToken *bool
    w.tag(99, WireType.LengthDelimited).string('a field from the future'); // unknown: skipped
    assert.deepEqual(decodeMessage('core.ServiceAccount', w.finish()), { metadata: { name: 'x', creationTimestamp: null }, automountServiceAccountToken: false });

    const ev = new BinaryWriter();
    ev.tag(14, WireType.LengthDelimited).string('').tag(15, WireType.LengthDelimited).string('').tag(8, WireType.Varint).int32(0);
    assert.deepEqual(decodeMessage('core.Event', ev.finish()), { reportingComponent: '', reportingInstance: '' });

    // repeated scalars, packed (proto3 writers) or not (proto2, as Go writes them)
    const packed = new BinaryWriter();
    packed.tag(4, WireType.LengthDelimited).fork().int64(4000).int64(0).join();
    packed.tag(4, WireType.Varint).int64(7);
    assert.deepEqual(decodeMessage('core.PodSecurityContext', packed.finish()), { supplementalGroups: [4000, 0, 7] });
  });

  it('IntOrString both ways; a zero value one is absent as the defaulting expects, a pointer one is 0', () => {
    const port = decodeMessage('core.ServicePort', encodeMessage('core.ServicePort', { port: 80, targetPort: 0 }));
    assert.deepEqual(port, { port: 80 });
    const ru = decodeMessage('apps.RollingUpdateDeployment', encodeMessage('apps.RollingUpdateDeployment', { maxUnavailable: 0, maxSurge: '25%' }));
    assert.deepEqual(ru, { maxUnavailable: 0, maxSurge: '25%' });
  });

  it('a stored value of the wrong JSON type is left out rather than failing the response', () => {
    assert.deepEqual(decodeMessage('apps.DeploymentSpec', encodeMessage('apps.DeploymentSpec', { replicas: 'three', paused: 'yes', minReadySeconds: 5 })), { minReadySeconds: 5 });
  });

  it('watch frames: 4-byte big-endian length + WatchEvent{type, object: RawExtension{raw: envelope}}', () => {
    const obj = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c', namespace: 'default', resourceVersion: '3' }, data: { k: 'v' } };
    const frame = watchFrame('MODIFIED', encodeObject(obj));
    assert.equal(frame.readUInt32BE(0), frame.length - 4);
    const stream = Buffer.concat([frame, watchFrame('DELETED', encodeObject(obj))]);
    assert.deepEqual(readWatchFrames(stream), [{ type: 'MODIFIED', object: obj }, { type: 'DELETED', object: obj }]);
  });
});

describe('content negotiation', () => {
  const built = { protobuf: true, table: true };
  it('orders ranges by q-value, then as written; q=0 is not acceptable', () => {
    assert.deepEqual(parseAccept('application/json;q=0.5, application/vnd.kubernetes.protobuf, text/html;q=0').map((r) => `${r.type}/${r.subtype}`),
      ['application/vnd.kubernetes.protobuf', 'application/json']);
  });

  it('picks the first servable range', () => {
    assert.equal(negotiateOutput(undefined, built), 'json');
    assert.equal(negotiateOutput('application/vnd.kubernetes.protobuf,application/json', built), 'protobuf');
    assert.equal(negotiateOutput('application/json;q=0.9,application/vnd.kubernetes.protobuf', built), 'protobuf');
    assert.equal(negotiateOutput('application/vnd.kubernetes.protobuf;q=0.1,application/json', built), 'json');
    assert.equal(negotiateOutput('*/*', built), 'json');
    assert.equal(negotiateOutput('*/*, application/vnd.kubernetes.protobuf', built), 'protobuf', 'a concrete type before a wildcard of the same q');
    assert.equal(negotiateOutput('application/yaml', built), 'yaml');
    assert.equal(negotiateOutput('application/json;as=Table;v=v1;g=meta.k8s.io,application/json', built), 'table');
    // Tables are JSON/YAML only: a protobuf Table range is skipped, as is any other conversion
    assert.equal(negotiateOutput('application/vnd.kubernetes.protobuf;as=Table;v=v1;g=meta.k8s.io,application/vnd.kubernetes.protobuf', built), 'protobuf');
    assert.equal(negotiateOutput('application/json;as=PartialObjectMetadata;v=v1;g=meta.k8s.io,application/json', built), 'json');
    // a JSON-only (CRD-like) kind falls through to JSON, a write answers no Table
    assert.equal(negotiateOutput('application/vnd.kubernetes.protobuf,application/json', { protobuf: false, table: true }), 'json');
    assert.equal(negotiateOutput('application/json;as=Table;v=v1;g=meta.k8s.io,application/json', { protobuf: true, table: false }), 'json');
  });

  it('406 when nothing is acceptable; 415 only for a body type the endpoint cannot decode', () => {
    const e = (() => { try { negotiateOutput('text/html', built); } catch (err) { return err; } })() as StatusError;
    assert.equal(e.code, 406);
    assert.equal(e.message, 'only the following media types are accepted: application/json, application/yaml, application/vnd.kubernetes.protobuf');
    assert.throws(() => negotiateOutput('application/vnd.kubernetes.protobuf', { protobuf: false, table: false }), (err: StatusError) => err.code === 406);
    assert.equal(bodyFormatOf('application/vnd.kubernetes.protobuf', true), 'protobuf');
    assert.equal(bodyFormatOf('application/json; charset=utf-8', true), 'json');
    assert.throws(() => bodyFormatOf('application/vnd.kubernetes.protobuf', false), (err: StatusError) => err.code === 415 && !err.message.includes('protobuf'));
    assert.throws(() => bodyFormatOf('text/plain', true), (err: StatusError) => err.code === 415);
  });
});
