/**
 * The unbound-claim branches with no matching volume, after upstream's `provision_test.go`
 * (external hand-off: 11-x), `binder_test.go` (WaitForFirstConsumer / WaitForPodScheduled) and
 * `pv_controller_test.go` (retroactive default StorageClass, 15-x). claimflow has no in-tree volume
 * plugins, so a `kubernetes.io/` provisioner is reported as upstream reports a missing plugin.
 */
import {
  ANN_BETA_STORAGE_CLASS,
  ANN_BETA_STORAGE_PROVISIONER,
  ANN_IS_DEFAULT_CLASS,
  ANN_SELECTED_NODE,
  ANN_STORAGE_PROVISIONER,
  type Pod,
  type StorageClass,
} from '../../../lib/binder/index.ts';
import {
  claimWithAnnotation,
  claimWithoutClass,
  ct,
  newClaimArray,
  newVolumeArray,
  novolumes,
  runSyncTests,
} from './framework.ts';

const RETAIN = 'Retain';
const CPENDING = 'Pending';
const EXTERNAL = 'vendor.com/my-volume';
const classExternal = 'external';
const classExternalWait = 'external-wait';
const classNoProvisioner = 'local';
const classWait = 'wait';
const classUnset = 'unset-mode';
const classGold = 'gold';

const sc = (name: string, provisioner: string, mode: string | undefined, extra: Partial<StorageClass['metadata']> = {}): StorageClass => ({
  metadata: { name, ...extra },
  provisioner,
  ...(mode ? { volumeBindingMode: mode } : {}),
});

const classes: StorageClass[] = [
  sc(classExternal, EXTERNAL, 'Immediate'),
  sc(classExternalWait, EXTERNAL, 'WaitForFirstConsumer'),
  sc(classNoProvisioner, 'kubernetes.io/no-provisioner', 'Immediate'),
  sc(classWait, 'kubernetes.io/no-provisioner', 'WaitForFirstConsumer'),
  sc(classUnset, EXTERNAL, undefined),
];

const externalMessage = `Waiting for a volume to be created either by the external provisioner '${EXTERNAL}' or manually by the system administrator. If volume creation is delayed, please verify that the provisioner is running and correctly registered.`;
const handedOff = (claims: ReturnType<typeof newClaimArray>) =>
  claimWithAnnotation(ANN_BETA_STORAGE_PROVISIONER, EXTERNAL, claimWithAnnotation(ANN_STORAGE_PROVISIONER, EXTERNAL, claims));

const pod = (name: string, claimName: string, nodeName?: string, phase = 'Pending'): Pod => ({
  metadata: { name, namespace: 'default' },
  spec: { ...(nodeName ? { nodeName } : {}), volumes: [{ persistentVolumeClaim: { claimName } }] },
  status: { phase },
});

runSyncTests(
  [
    ct('11-17 - external provisioner: both storage-provisioner annotations and ExternalProvisioning',
      novolumes, novolumes,
      newClaimArray('claim11-17', 'uid11-17', '1Gi', '', CPENDING, classExternal),
      handedOff(newClaimArray('claim11-17', 'uid11-17', '1Gi', '', CPENDING, classExternal)),
      ['Normal ExternalProvisioning'], false, 'syncClaim', { expectedMessages: [externalMessage] }),
    ct('11-17b - external provisioner already recorded: no write, the event again',
      novolumes, novolumes,
      claimWithAnnotation(ANN_STORAGE_PROVISIONER, EXTERNAL, newClaimArray('claim11-17b', 'uid11-17b', '1Gi', '', CPENDING, classExternal)),
      claimWithAnnotation(ANN_STORAGE_PROVISIONER, EXTERNAL, newClaimArray('claim11-17b', 'uid11-17b', '1Gi', '', CPENDING, classExternal)),
      ['Normal ExternalProvisioning'], false, 'syncClaim'),
    ct('11-17c - external hand-off never writes the claim status',
      novolumes, novolumes,
      newClaimArray('claim11-17c', 'uid11-17c', '1Gi', '', 'Bound', classExternal),
      handedOff(newClaimArray('claim11-17c', 'uid11-17c', '1Gi', '', 'Bound', classExternal)),
      ['Normal ExternalProvisioning'], false, 'syncClaim'),
    ct('11-18 - in-tree provisioner without a plugin: ProvisioningFailed, claim untouched',
      novolumes, novolumes,
      newClaimArray('claim11-18', 'uid11-18', '1Gi', '', CPENDING, classNoProvisioner),
      newClaimArray('claim11-18', 'uid11-18', '1Gi', '', CPENDING, classNoProvisioner),
      ['Warning ProvisioningFailed'], false, 'syncClaim',
      { expectedMessages: ['no volume plugin matched name: kubernetes.io/no-provisioner'] }),
    ct('11-19 - class not found: ProvisioningFailed with the lister error',
      novolumes, novolumes,
      newClaimArray('claim11-19', 'uid11-19', '1Gi', '', CPENDING, classGold),
      newClaimArray('claim11-19', 'uid11-19', '1Gi', '', CPENDING, classGold),
      ['Warning ProvisioningFailed'], false, 'syncClaim', { expectedMessages: ['storageclass.storage.k8s.io "gold" not found'] }),
    ct('11-20 - the beta class annotation beats spec.storageClassName',
      novolumes, novolumes,
      claimWithAnnotation(ANN_BETA_STORAGE_CLASS, classExternal, newClaimArray('claim11-20', 'uid11-20', '1Gi', '', CPENDING, classGold)),
      handedOff(claimWithAnnotation(ANN_BETA_STORAGE_CLASS, classExternal, newClaimArray('claim11-20', 'uid11-20', '1Gi', '', CPENDING, classGold))),
      ['Normal ExternalProvisioning'], false, 'syncClaim'),
    ct('11-23 - skip finding PV and provision for PVC annotated with selected-node',
      newVolumeArray('volume11-23', '1Gi', '', '', 'Available', RETAIN, classExternalWait),
      newVolumeArray('volume11-23', '1Gi', '', '', 'Available', RETAIN, classExternalWait),
      claimWithAnnotation(ANN_SELECTED_NODE, 'node1', newClaimArray('claim11-23', 'uid11-23', '1Gi', '', CPENDING, classExternalWait)),
      handedOff(claimWithAnnotation(ANN_SELECTED_NODE, 'node1', newClaimArray('claim11-23', 'uid11-23', '1Gi', '', CPENDING, classExternalWait))),
      ['Normal ExternalProvisioning'], false, 'syncClaim'),
    ct('11-24 - delayed binding without selected-node waits for the first consumer',
      newVolumeArray('volume11-24', '1Gi', '', '', 'Available', RETAIN, classExternalWait),
      newVolumeArray('volume11-24', '1Gi', '', '', 'Available', RETAIN, classExternalWait),
      newClaimArray('claim11-24', 'uid11-24', '1Gi', '', 'Bound', classExternalWait),
      newClaimArray('claim11-24', 'uid11-24', '1Gi', '', CPENDING, classExternalWait),
      ['Normal WaitForFirstConsumer'], false, 'syncClaim'),
    ct('1-13b - VolumeBindingMode not set is an error',
      novolumes, novolumes,
      newClaimArray('claim1-13b', 'uid1-13b', '1Gi', '', CPENDING, classUnset),
      newClaimArray('claim1-13b', 'uid1-13b', '1Gi', '', CPENDING, classUnset),
      [], /^VolumeBindingMode not set for StorageClass "unset-mode"$/, 'syncClaim'),
  ],
  classes,
);

// WaitForPodScheduled: non-terminated pods without a node that use the claim.
runSyncTests(
  [
    ct('1-19 - delayed binding with one unscheduled pod',
      novolumes, novolumes,
      newClaimArray('claim1-19', 'uid1-19', '1Gi', '', CPENDING, classWait),
      newClaimArray('claim1-19', 'uid1-19', '1Gi', '', CPENDING, classWait),
      ['Normal WaitForPodScheduled'], false, 'syncClaim', { expectedMessages: ['waiting for pod pod-a to be scheduled'] }),
  ],
  classes,
  [pod('pod-a', 'claim1-19'), pod('pod-done', 'claim1-19', undefined, 'Succeeded'), pod('pod-running', 'claim1-19', 'node1', 'Running'), pod('pod-other', 'other')],
);
runSyncTests(
  [
    ct('1-20 - delayed binding with two unscheduled pods',
      novolumes, novolumes,
      newClaimArray('claim1-20', 'uid1-20', '1Gi', '', CPENDING, classWait),
      newClaimArray('claim1-20', 'uid1-20', '1Gi', '', CPENDING, classWait),
      ['Normal WaitForPodScheduled'], false, 'syncClaim', { expectedMessages: ['waiting for pods pod-a,pod-b to be scheduled'] }),
  ],
  classes,
  [pod('pod-a', 'claim1-20'), pod('pod-b', 'claim1-20')],
);

// Retroactive default StorageClass (RetroactiveDefaultStorageClass, GA).
const defaultAnn = { annotations: { [ANN_IS_DEFAULT_CLASS]: 'true' } };
runSyncTests(
  [
    ct('15-1 - claim without a class gets the default class, status untouched',
      novolumes, novolumes,
      claimWithoutClass(newClaimArray('claim15-1', 'uid15-1', '1Gi', '', 'Bound', undefined)),
      newClaimArray('claim15-1', 'uid15-1', '1Gi', '', 'Bound', 'newer-default'),
      [], false, 'syncClaim', { exactEvents: true }),
    ct('15-2 - claim with class "" never gets a default',
      novolumes, novolumes,
      newClaimArray('claim15-2', 'uid15-2', '1Gi', '', CPENDING, ''),
      newClaimArray('claim15-2', 'uid15-2', '1Gi', '', CPENDING, ''),
      ['Normal FailedBinding'], false, 'syncClaim'),
    ct('15-3 - a beta class annotation counts as a class',
      novolumes, novolumes,
      claimWithAnnotation(ANN_BETA_STORAGE_CLASS, '', newClaimArray('claim15-3', 'uid15-3', '1Gi', '', CPENDING, undefined)),
      claimWithAnnotation(ANN_BETA_STORAGE_CLASS, '', newClaimArray('claim15-3', 'uid15-3', '1Gi', '', CPENDING, undefined)),
      ['Normal FailedBinding'], false, 'syncClaim'),
    ct('15-5 - a matching volume wins over the default class',
      newVolumeArray('volume15-5', '1Gi', '', '', 'Available', RETAIN, ''),
      newVolumeArray('volume15-5', '1Gi', 'uid15-5', 'claim15-5', 'Bound', RETAIN, '', 'pv.kubernetes.io/bound-by-controller'),
      newClaimArray('claim15-5', 'uid15-5', '1Gi', '', CPENDING, undefined),
      newClaimArray('claim15-5', 'uid15-5', '1Gi', 'volume15-5', 'Bound', undefined, 'pv.kubernetes.io/bound-by-controller', 'pv.kubernetes.io/bind-completed'),
      [], false, 'syncClaim', { exactEvents: true }),
  ],
  [
    ...classes,
    sc('older-default', EXTERNAL, 'Immediate', { ...defaultAnn, creationTimestamp: '2026-01-01T00:00:00Z' }),
    sc('newer-default', EXTERNAL, 'Immediate', { ...defaultAnn, creationTimestamp: '2026-02-01T00:00:00Z' }),
  ],
);
runSyncTests(
  [
    ct('15-4 - equal creation times: the lowest name is the default',
      novolumes, novolumes,
      newClaimArray('claim15-4', 'uid15-4', '1Gi', '', CPENDING, undefined),
      newClaimArray('claim15-4', 'uid15-4', '1Gi', '', CPENDING, 'a-default'),
      [], false, 'syncClaim', { exactEvents: true }),
  ],
  [
    sc('b-default', EXTERNAL, 'Immediate', { ...defaultAnn, creationTimestamp: '2026-01-01T00:00:00Z' }),
    sc('a-default', EXTERNAL, 'Immediate', { annotations: { 'storageclass.beta.kubernetes.io/is-default-class': 'true' }, creationTimestamp: '2026-01-01T00:00:00Z' }),
    sc('not-default', EXTERNAL, 'Immediate', { annotations: { [ANN_IS_DEFAULT_CLASS]: 'false' }, creationTimestamp: '2026-03-01T00:00:00Z' }),
  ],
);
runSyncTests([
  ct('15-6 - no default class: nothing assigned, FailedBinding',
    novolumes, novolumes,
    newClaimArray('claim15-6', 'uid15-6', '1Gi', '', CPENDING, undefined),
    newClaimArray('claim15-6', 'uid15-6', '1Gi', '', CPENDING, undefined),
    ['Normal FailedBinding'], false, 'syncClaim'),
]);
