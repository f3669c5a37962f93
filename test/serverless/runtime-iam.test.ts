/**
 * What the reconcile runtime itself does in DynamoDB, every function role it runs under must allow: before
 * each reconcile it reads the key's backoff record (control table) and cache entry (cache table) in one
 * `BatchGetItem` (lib/state/key-state.ts), which IAM authorises per table. The local stand-ins enforce no
 * IAM, so only this test catches a role that would be denied in AWS.
 */
import { before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { compileTemplate, type CfnResource, type CfnTemplate } from '../../infra/local/stack/template.ts';
import { referencedId } from '../../infra/local/stack/wiring.ts';

let dev: CfnTemplate;
before(async () => {
  dev = await compileTemplate({ stage: 'dev', region: 'eu-west-1' });
});

const statements = (role: CfnResource): any[] => role.Properties!.Policies.flatMap((p: any) => p.PolicyDocument.Statement);
/** The resource a statement names by `Fn::GetAtt`/`Ref` (index ARNs built with `Fn::Sub` are not the table). */
const tableOf = (r: unknown): string | undefined => {
  try {
    return referencedId(r);
  } catch {
    return undefined;
  }
};

describe('serverless.yml: roles of the functions on the SQS runtime', () => {
  it('every function fed by an SQS queue may GetItem and BatchGetItem on the control and the cache table', () => {
    const mappings = Object.values(dev.Resources).filter((r) => r.Type === 'AWS::Lambda::EventSourceMapping');
    const functions = [...new Set(mappings.map((m) => referencedId(m.Properties!.FunctionName)))].sort();
    assert.deepEqual(functions, ['BinderLambdaFunction', 'LabelSyncLambdaFunction', 'ProvisionerLambdaFunction', 'SharedVolumeLambdaFunction']);
    for (const id of functions) {
      const role = dev.Resources[referencedId(dev.Resources[id].Properties!.Role)];
      for (const table of ['ControlTable', 'CacheTable']) {
        for (const action of ['dynamodb:GetItem', 'dynamodb:BatchGetItem']) {
          const allowed = statements(role).some((st) =>
            st.Effect === 'Allow' && [st.Action].flat().includes(action) && [st.Resource].flat().some((r: unknown) => tableOf(r) === table));
          assert.ok(allowed, `${id} may ${action} on ${table}`);
        }
      }
    }
  });
});
