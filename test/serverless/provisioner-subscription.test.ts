/**
 * The provisioner's wiring in the template osls compiles from serverless.yml (no credentials, no
 * network), in AWS and in the local stack (which derives its subscriptions from the same template):
 * the provisioner queue receives every kind the provisioner controller reconciles — VolumeAttachments
 * included, so a detach requeues the PV it held back — and the provisioner's role may do what the
 * requeue needs (send to its own queue, forget the PV's backoff record, list the cached attachments).
 */
import { before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { compileTemplate, type CfnResource, type CfnTemplate } from '../../infra/local/stack/template.ts';
import { readWiring, referencedId, resolveIfs } from '../../infra/local/stack/wiring.ts';
import { createProvisionerController } from '../../lib/provisioner/controller.ts';
import { provisionerOptionsFromEnv } from '../../lib/provisioner/options.ts';
import type { Provisioner } from '../../lib/provisioner/types.ts';

let dev: CfnTemplate;
let local: CfnTemplate;

before(async () => {
  [dev, local] = await Promise.all([compileTemplate({ stage: 'dev', region: 'eu-west-1' }), compileTemplate({ stage: 'local' })]);
});

const unused: Provisioner = {
  provision: async () => ({ state: 'Finished', error: new Error('unused') }),
  delete: async () => {},
};
const controllerKinds = (): string[] => [...createProvisionerController({ options: provisionerOptionsFromEnv({}), provisioner: unused, volumeRequeuer: null }).kinds].sort();

const KINDS = ['PersistentVolume', 'PersistentVolumeClaim', 'StorageClass', 'VolumeAttachment'];
const statements = (role: CfnResource): any[] => role.Properties!.Policies.flatMap((p: any) => p.PolicyDocument.Statement);

describe('serverless.yml: the provisioner subscription', () => {
  it('the provisioner controller reconciles VolumeAttachments', () => {
    assert.ok(controllerKinds().includes('VolumeAttachment'));
  });

  it('in AWS, a VolumeAttachment event reaches the provisioner, which may requeue the PV (own queue, backoff record, cached attachments)', () => {
    const sub = dev.Resources.ProvisionerSubscription.Properties!;
    assert.equal(referencedId(sub.Endpoint), 'ProvisionerQueue');
    assert.equal(sub.FilterPolicyScope, 'MessageAttributes');
    const policy = resolveIfs(dev, sub.FilterPolicy) as { kind: string[] };
    assert.deepEqual([...policy.kind].sort(), KINDS, 'the filter names VolumeAttachment');
    assert.deepEqual([...policy.kind].sort(), controllerKinds(), 'every kind the controller reconciles, no other');
    const fn = dev.Resources.ProvisionerLambdaFunction.Properties!;
    assert.equal(referencedId(fn.Environment.Variables.PROVISIONER_QUEUE_URL), 'ProvisionerQueue');
    const role = dev.Resources[referencedId(fn.Role)];
    const allows = (action: string, resource: string): boolean => statements(role).some((st) =>
      st.Effect === 'Allow' && [st.Action].flat().includes(action) && [st.Resource].flat().some((r: unknown) => referencedId(r) === resource));
    assert.ok(allows('sqs:SendMessage', 'ProvisionerQueue'), 'send to its own queue');
    assert.ok(allows('dynamodb:DeleteItem', 'ControlTable'), 'forget a backoff record');
    assert.ok(allows('dynamodb:Query', 'CacheTable'), 'list the cached VolumeAttachments');
  });

  it('the local stack, which derives its subscriptions from the same template, subscribes the provisioner queue to VolumeAttachments', () => {
    const subs = readWiring(local).subscriptions.filter((s) => s.queue === 'ProvisionerQueue');
    assert.equal(subs.length, 1);
    assert.deepEqual([...(subs[0].filterPolicy as { kind: string[] }).kind].sort(), KINDS);
  });
});
