/**
 * Which claims the provisioner resync hands back to the controller (upstream's informer resync hands
 * every claim; `shouldProvision` then filters): those of one of our classes, bound or not, and those
 * whose storage-provisioner annotation names one of ours (the GA key shadowing the beta one), even
 * while their class is not in the cache.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { annStorageClass, annStorageProvisioner } from '../../../lib/provisioner/constants.ts';
import { isClaimOfProvisioner } from '../../../lib/provisioner/resync.ts';
import { config, newClaim } from './fixtures.ts';

const fb = 'foo.bar/baz';
const ourClasses = new Set(['class-1']);

const rows: Array<{ name: string; claim: ReturnType<typeof newClaim>; additional?: string[]; expected: boolean }> = [
  { name: 'pending claim of our class, not annotated yet', claim: newClaim('c', 'u', 'class-1', '', '', null), expected: true },
  { name: 'bound claim of our class', claim: newClaim('c', 'u', 'class-1', fb, 'pv-1', null), expected: true },
  { name: 'claim of our class by the beta class annotation', claim: newClaim('c', 'u', 'class-2', '', '', { [annStorageClass]: 'class-1' }), expected: true },
  { name: 'claim of another class by the beta class annotation', claim: newClaim('c', 'u', 'class-1', '', '', { [annStorageClass]: 'class-2' }), expected: false },
  { name: 'class not cached, GA annotation names us', claim: newClaim('c', 'u', 'missing', '', '', { [annStorageProvisioner]: fb }), expected: true },
  { name: 'class not cached, beta annotation names us', claim: newClaim('c', 'u', 'missing', fb, '', null), expected: true },
  { name: 'GA annotation of another provisioner shadows a beta one naming us', claim: newClaim('c', 'u', 'class-2', fb, '', { [annStorageProvisioner]: 'abc.def/ghi' }), expected: false },
  { name: 'an additional provisioner name counts', claim: newClaim('c', 'u', 'class-2', '', '', { [annStorageProvisioner]: 'extra.io/x' }), additional: ['extra.io/x'], expected: true },
  { name: 'another class, another provisioner', claim: newClaim('c', 'u', 'class-2', 'abc.def/ghi', '', null), expected: false },
  { name: 'no class, no annotation', claim: newClaim('c', 'u', '', '', '', null), expected: false },
];

describe('isClaimOfProvisioner (resync selection)', () => {
  for (const row of rows) {
    it(row.name, () => {
      assert.equal(isClaimOfProvisioner(config(fb, { additionalProvisionerNames: row.additional ?? [] }), ourClasses, row.claim), row.expected);
    });
  }
});
