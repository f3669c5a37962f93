// PV, PVC and StorageClass strategies: canonical quantities, defaults, status split, validation and
// update immutability, mirroring upstream's validation_test.go cases.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { persistentVolumeClaims } from '../../../infra/local/kube-api/kinds/persistentvolumeclaim.ts';
import { persistentVolumes } from '../../../infra/local/kube-api/kinds/persistentvolume.ts';
import { storageClasses } from '../../../infra/local/kube-api/kinds/storageclass.ts';
import { StatusError, type KubeObject } from '../../../infra/local/kube-api/types.ts';

const pvcS = persistentVolumeClaims.strategy;
const pvS = persistentVolumes.strategy;
const scS = storageClasses.strategy;

const claim = (spec: Record<string, unknown> = {}, extra: Partial<KubeObject> = {}): KubeObject => ({
  metadata: { name: 'c1', namespace: 'default', uid: 'u1', creationTimestamp: '2026-01-01T00:00:00Z' },
  spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } }, volumeMode: 'Filesystem', ...spec },
  ...extra,
});
const volume = (spec: Record<string, unknown> = {}): KubeObject => ({
  metadata: { name: 'pv1', uid: 'u2', creationTimestamp: '2026-01-01T00:00:00Z' },
  spec: { accessModes: ['ReadWriteOnce'], capacity: { storage: '1Gi' }, csi: { driver: 'csi.example.com', volumeHandle: 'h1' },
    persistentVolumeReclaimPolicy: 'Retain', volumeMode: 'Filesystem', ...spec },
});
const fields = (errs: Array<{ type: string; field: string }>) => errs.map((e) => `${e.type} ${e.field}`);

describe('kube-api PVC strategy', () => {
  const canonical: Array<[string | number, string]> = [
    ['1Gi', '1Gi'], ['1.5Gi', '1536Mi'], ['1024Mi', '1Gi'], ['500M', '500M'], ['1000000000', '1G'], [1073741824, '1073741824'], ['1.5', '1500m'],
  ];
  for (const [input, want] of canonical) {
    it(`decodes ${JSON.stringify(input)} as ${want}`, () => {
      const pvc = claim({ resources: { requests: { storage: input } } });
      pvcS.decode(pvc);
      assert.equal(pvc.spec.resources.requests.storage, want);
    });
  }

  for (const bad of ['20Gx', '1GB', '1gi', '1 Gi', true]) {
    it(`rejects the quantity ${JSON.stringify(bad)} with 400 BadRequest at decode`, () => {
      const pvc = claim({ resources: { requests: { storage: bad } } });
      assert.throws(() => pvcS.decode(pvc), (err: unknown) => err instanceof StatusError && err.code === 400 && err.reason === 'BadRequest'
        && err.message === 'PersistentVolumeClaim in version "v1" cannot be handled as a PersistentVolumeClaim: quantities must match the regular expression \'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$\'');
    });
  }

  it('a wrongly typed field is 400 "cannot be handled as", named as Go\'s encoding/json names it', () => {
    const pvc = claim({ accessModes: 'ReadWriteOnce' });
    assert.throws(() => pvcS.decode(pvc), (err: unknown) => err instanceof StatusError && err.code === 400
      && err.message === 'PersistentVolumeClaim in version "v1" cannot be handled as a PersistentVolumeClaim: json: cannot unmarshal string into Go struct field PersistentVolumeClaimSpec.spec.accessModes of type []v1.PersistentVolumeAccessMode');
    assert.throws(() => pvcS.decode({ metadata: {}, spec: [] }), /Go struct field PersistentVolumeClaim.spec of type v1.PersistentVolumeClaimSpec/);
  });

  it('defaults volumeMode and phase; create resets status to Pending', () => {
    const pvc: KubeObject = { metadata: { name: 'c' }, spec: {}, status: { phase: 'Bound', capacity: { storage: '1Gi' } } };
    pvcS.defaults(pvc);
    pvcS.prepareForCreate(pvc);
    pvcS.defaults(pvc);
    assert.deepEqual([pvc.spec.volumeMode, pvc.status], ['Filesystem', { phase: 'Pending' }]);
  });

  it('main update keeps the old status; status update keeps the old spec', () => {
    const old = claim({}, { status: { phase: 'Pending' } });
    const main = claim({ volumeName: 'pv1' }, { status: { phase: 'Bound' } });
    pvcS.prepareForUpdate(main, old);
    assert.deepEqual([main.spec.volumeName, main.status.phase], ['pv1', 'Pending']);
    const status = claim({ volumeName: 'other' }, { status: { phase: 'Bound' } });
    pvcS.prepareForUpdate(status, old, 'status');
    assert.deepEqual([status.spec.volumeName, status.status.phase], [undefined, 'Bound']);
  });

  const createCases: Array<[string, Record<string, unknown>, string[]]> = [
    ['valid', {}, []],
    ['no access modes', { accessModes: [] }, ['FieldValueRequired spec.accessModes']],
    ['unknown access mode', { accessModes: ['ReadWriteSometimes'] }, ['FieldValueNotSupported spec.accessModes']],
    ['RWOP with another mode', { accessModes: ['ReadWriteOncePod', 'ReadWriteOnce'] }, ['FieldValueForbidden spec.accessModes']],
    ['no storage request', { resources: { requests: {} } }, ['FieldValueRequired spec.resources[storage]']],
    ['zero storage', { resources: { requests: { storage: '0' } } }, ['FieldValueInvalid spec.resources[storage]']],
    ['sub-unit storage passes', { resources: { requests: { storage: '500m' } } }, []],
    ['bad class name', { storageClassName: 'Fast_SSD' }, ['FieldValueInvalid spec.storageClassName']],
    ['empty class allowed', { storageClassName: '' }, []],
    ['bad volume mode', { volumeMode: 'Raw' }, ['FieldValueNotSupported spec.volumeMode']],
    ['selector: bad operator, In without values, Exists with values', { selector: { matchLabels: { tier: 'gold' }, matchExpressions: [
      { key: 'a', operator: 'Near', values: [] }, { key: 'b', operator: 'In' }, { key: 'c', operator: 'Exists', values: ['x'] }] } },
    ['FieldValueInvalid spec.selector.matchExpressions[0].operator', 'FieldValueRequired spec.selector.matchExpressions[1].values',
      'FieldValueForbidden spec.selector.matchExpressions[2].values']],
  ];
  for (const [name, spec, want] of createCases) {
    it(`validate: ${name}`, () => assert.deepEqual(fields(pvcS.validate(claim(spec))), want));
  }

  it('required-value and not-supported causes carry upstream details', () => {
    const [req] = pvcS.validate(claim({ accessModes: [] }));
    assert.equal(req.detail, 'at least 1 access mode is required');
    const [ns] = pvcS.validate(claim({ volumeMode: 'Raw' }));
    assert.equal(ns.detail, 'supported values: "Block", "Filesystem"');
  });

  const updateCases: Array<[string, KubeObject, KubeObject, string[]]> = [
    ['volumeName set once from empty', claim(), claim({ volumeName: 'pv1' }), []],
    ['volumeName changed', claim({ volumeName: 'a' }), claim({ volumeName: 'b' }), ['FieldValueForbidden spec']],
    ['class nil → value (retroactive default)', claim(), claim({ storageClassName: 'std' }), []],
    ['class changed', claim({ storageClassName: 'a' }), claim({ storageClassName: 'b' }), ['FieldValueForbidden spec']],
    ['access modes changed', claim(), claim({ accessModes: ['ReadWriteMany'] }), ['FieldValueForbidden spec']],
    ['size grown on an unbound claim', claim(), claim({ resources: { requests: { storage: '2Gi' } } }), ['FieldValueForbidden spec']],
    ['size grown on a bound claim', claim({}, { status: { phase: 'Bound', capacity: { storage: '1Gi' } } }),
      claim({ resources: { requests: { storage: '2Gi' } } }, { status: { phase: 'Bound' } }), []],
    ['size shrunk to status.capacity on a bound claim', claim({ resources: { requests: { storage: '2Gi' } } }, { status: { phase: 'Bound', capacity: { storage: '1Gi' } } }),
      claim({}, { status: { phase: 'Bound' } }), ['FieldValueForbidden spec.resources.requests.storage']],
    ['volumeMode changed', claim(), claim({ volumeMode: 'Block' }), ['FieldValueForbidden spec', 'FieldValueInvalid volumeMode']],
  ];
  for (const [name, old, next, want] of updateCases) {
    it(`validateUpdate: ${name}`, () => assert.deepEqual(fields(pvcS.validateUpdate(next, old)), want));
  }

  it('the immutability error names what may change', () => {
    const [err] = pvcS.validateUpdate(claim({ storageClassName: 'b' }), claim({ storageClassName: 'a' }));
    assert.match(err.detail, /^spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims\n/);
    assert.match(err.detail, /storageClassName/);
  });

  it('warns about fractional byte requests', () => {
    assert.deepEqual(pvcS.warnings!(claim({ resources: { requests: { storage: '500m' } } })),
      ['spec.resources.requests[storage]: fractional byte value "500m" is invalid, must be an integer']);
    assert.deepEqual(pvcS.warnings!(claim({ resources: { requests: { storage: '1.5Gi' } } })), []);
  });

  it('the beta storage-class annotation is immutable', () => {
    const ann = (v: string) => ({ metadata: { ...claim().metadata, annotations: { 'volume.beta.kubernetes.io/storage-class': v } } });
    const errs = pvcS.validateUpdate(claim({}, ann('b')), claim({}, ann('a')));
    assert.deepEqual(fields(errs), ['FieldValueInvalid metadata.annotations.volume.beta.kubernetes.io/storage-class']);
  });
});

describe('kube-api PV strategy', () => {
  it('defaults reclaim policy Retain, volumeMode Filesystem and phase Pending; capacity is canonical', () => {
    const pv: KubeObject = { metadata: { name: 'pv' }, spec: { capacity: { storage: '2048Mi' } } };
    pvS.decode(pv);
    pvS.defaults(pv);
    assert.deepEqual([pv.spec.persistentVolumeReclaimPolicy, pv.spec.volumeMode, pv.status.phase, pv.spec.capacity.storage],
      ['Retain', 'Filesystem', 'Pending', '2Gi']);
  });

  it('create resets status to Pending with a lastPhaseTransitionTime; /status sets it again only on a phase change', () => {
    const pv = volume();
    pv.status = { phase: 'Bound' };
    pvS.prepareForCreate(pv);
    assert.equal(pv.status.phase, 'Pending');
    assert.match(pv.status.lastPhaseTransitionTime, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    const old = volume();
    old.status = { phase: 'Pending', lastPhaseTransitionTime: '2020-01-01T00:00:00Z' };
    const same = volume();
    same.status = { phase: 'Pending' };
    pvS.prepareForUpdate(same, old, 'status');
    assert.equal(same.status.lastPhaseTransitionTime, '2020-01-01T00:00:00Z');
    const changed = volume();
    changed.status = { phase: 'Available', lastPhaseTransitionTime: '2020-01-01T00:00:00Z' };
    pvS.prepareForUpdate(changed, old, 'status');
    assert.notEqual(changed.status.lastPhaseTransitionTime, '2020-01-01T00:00:00Z');
    const main = volume({ capacity: { storage: '5Gi' } });
    main.status = { phase: 'Bound' };
    pvS.prepareForUpdate(main, old);
    assert.deepEqual(main.status, old.status);
  });

  const createCases: Array<[string, Record<string, unknown>, string[]]> = [
    ['valid CSI', {}, []],
    ['no access modes', { accessModes: undefined }, ['FieldValueRequired spec.accessModes']],
    ['no capacity', { capacity: undefined }, ['FieldValueRequired spec.capacity']],
    ['capacity with another key', { capacity: { storage: '1Gi', cpu: '1' } }, ['FieldValueNotSupported spec.capacity']],
    ['no volume source', { csi: undefined }, ['FieldValueRequired spec']],
    ['two volume sources (the later one in upstream order is named)', { hostPath: { path: '/x' } }, ['FieldValueForbidden spec.csi']],
    ['local without nodeAffinity', { csi: undefined, local: { path: '/mnt' } }, ['FieldValueRequired spec.nodeAffinity']],
    ['CSI without driver and handle', { csi: {} }, ['FieldValueRequired spec.csi.driver', 'FieldValueRequired spec.csi.volumeHandle']],
    ['unknown reclaim policy', { persistentVolumeReclaimPolicy: 'Keep' }, ['FieldValueNotSupported spec.persistentVolumeReclaimPolicy']],
  ];
  for (const [name, spec, want] of createCases) {
    it(`validate: ${name}`, () => assert.deepEqual(fields(pvS.validate(volume(spec))), want));
  }

  it('source, volumeMode and a set nodeAffinity are immutable; claimRef, capacity and reclaim policy are not', () => {
    const aff = { required: { nodeSelectorTerms: [{ matchExpressions: [{ key: 'k', operator: 'In', values: ['a'] }] }] } };
    assert.deepEqual(fields(pvS.validateUpdate(volume({ csi: { driver: 'csi.example.com', volumeHandle: 'h2' } }), volume())),
      ['FieldValueForbidden spec.persistentvolumesource']);
    assert.deepEqual(fields(pvS.validateUpdate(volume({ volumeMode: 'Block' }), volume())), ['FieldValueInvalid volumeMode']);
    assert.deepEqual(fields(pvS.validateUpdate(volume({ nodeAffinity: { ...aff, required: { nodeSelectorTerms: [{}] } } }), volume({ nodeAffinity: aff }))),
      ['FieldValueInvalid nodeAffinity']);
    assert.deepEqual(pvS.validateUpdate(volume({ claimRef: { name: 'c', namespace: 'ns' }, capacity: { storage: '9Gi' }, persistentVolumeReclaimPolicy: 'Delete' }), volume()), []);
  });

  it('warns about deprecated node labels, the beta class annotation and removed plugins', () => {
    const pv = volume({ nodeAffinity: { required: { nodeSelectorTerms: [{ matchExpressions: [
      { key: 'kubernetes.io/hostname', operator: 'In', values: ['n'] },
      { key: 'failure-domain.beta.kubernetes.io/zone', operator: 'In', values: ['a'] }] }] } } });
    pv.metadata.annotations = { 'volume.beta.kubernetes.io/storage-class': 'gold' };
    assert.deepEqual(pvS.warnings!(pv), [
      'metadata.annotations[volume.beta.kubernetes.io/storage-class]: deprecated since v1.8; use "storageClassName" attribute instead',
      'spec.nodeAffinity.required.nodeSelectorTerms[0].matchExpressions[1].key: failure-domain.beta.kubernetes.io/zone is deprecated since v1.17; use "topology.kubernetes.io/zone" instead',
    ]);
    assert.deepEqual(pvS.warnings!(volume({ csi: undefined, storageos: { volumeName: 'v' } })), ['spec.storageos: deprecated in v1.22, non-functional in v1.25+']);
  });

  it('warns that Recycle is deprecated', () => {
    assert.deepEqual(pvS.warnings!(volume({ persistentVolumeReclaimPolicy: 'Recycle' })),
      ['spec.persistentVolumeReclaimPolicy: The Recycle reclaim policy is deprecated. Instead, the recommended approach is to use dynamic provisioning.']);
    assert.deepEqual(pvS.warnings!(volume()), []);
  });
});

describe('kube-api StorageClass strategy', () => {
  const sc = (extra: Record<string, unknown> = {}): KubeObject => ({ metadata: { name: 'std', uid: 'u' }, provisioner: 'csi.example.com', ...extra });

  it('defaults reclaimPolicy Delete and volumeBindingMode Immediate', () => {
    const o = sc();
    scS.defaults(o);
    assert.deepEqual([o.reclaimPolicy, o.volumeBindingMode], ['Delete', 'Immediate']);
  });

  it('rejects a missing provisioner and unsupported modes', () => {
    const o = sc({ provisioner: '', reclaimPolicy: 'Recycle', volumeBindingMode: 'Later' });
    assert.deepEqual(fields(scS.validate(o)), ['FieldValueRequired provisioner', 'FieldValueNotSupported reclaimPolicy', 'FieldValueNotSupported volumeBindingMode']);
  });

  it('parameters, provisioner, reclaimPolicy and volumeBindingMode are immutable; allowVolumeExpansion is not', () => {
    const base = sc({ parameters: { a: '1' }, reclaimPolicy: 'Delete', volumeBindingMode: 'Immediate' });
    const changed = sc({ provisioner: 'other.io', parameters: { a: '2' }, reclaimPolicy: 'Retain', volumeBindingMode: 'WaitForFirstConsumer' });
    const errs = scS.validateUpdate(changed, base);
    assert.deepEqual(errs.map((e) => `${e.field}: ${e.detail}`), [
      'parameters: updates to parameters are forbidden.',
      'provisioner: updates to provisioner are forbidden.',
      'reclaimPolicy: updates to reclaimPolicy are forbidden.',
      'volumeBindingMode: field is immutable',
    ]);
    assert.deepEqual(scS.validateUpdate({ ...base, allowVolumeExpansion: true }, base), []);
  });
});
