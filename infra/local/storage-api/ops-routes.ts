/**
 * Test and operations endpoints under `/_storage` (never authenticated, never faulted, never counted):
 * fault injection, the request counter, token expiry, nodes, and the NFS shared-volume lifecycle.
 *
 * | call | effect |
 * |---|---|
 * | `GET/POST/DELETE /_storage/faults` | list / add (a rule or `{rules:[…]}`) / clear fault rules |
 * | `GET/DELETE /_storage/requests` | calls per `METHOD /route` and the total / reset |
 * | `POST /_storage/tokens/expire` | expire every session (next API call → 401) |
 * | `GET /_storage/state` | the whole state |
 * | `POST /_storage/nodes` `{name, labels?}` | register a node (idempotent by name) |
 * | `DELETE /_storage/nodes/{id}` | remove a node |
 * | `POST /_storage/volumes/{id}/share` `{endpoint?}` | attach as shared: `nfs.serviceEndpoint` set |
 * | `POST /_storage/volumes/{id}/failover` `{endpoint?, inProgress?}` | move the NFS server |
 * | `POST /_storage/volumes/{id}/unshare` | detach |
 * | `GET /_storage/healthz` | `ok` |
 */
import { z } from 'zod';
import type { AuthStore } from './auth.ts';
import type { RequestCounter } from './counter.ts';
import type { FaultInjector, FaultRule } from './faults.ts';
import { ApiFailure } from './errors.ts';
import { parse } from './api-routes.ts';
import type { Route } from './router.ts';
import type { StorageState } from './state.ts';

const FaultRuleSchema = z.object({
  method: z.string().optional(),
  path: z.string().startsWith('/'),
  times: z.number().optional(),
  status: z.number().int().min(100).max(599).optional(),
  message: z.string().optional(),
  latencyMs: z.number().nonnegative().optional(),
  stale: z.boolean().optional(),
  drop: z.boolean().optional(),
  loseResponse: z.boolean().optional(),
});
const FaultsBodySchema = z.union([z.object({ rules: z.array(FaultRuleSchema) }), FaultRuleSchema]);
const AddNodeSchema = z.object({ name: z.string().min(1), labels: z.record(z.string(), z.string()).optional() });
const ShareSchema = z.object({ endpoint: z.string().min(1).optional() });
const FailoverSchema = z.object({ endpoint: z.string().min(1).optional(), inProgress: z.boolean().optional() });

/** The `/_storage` routes. */
export function opsRoutes(state: StorageState, auth: AuthStore, faults: FaultInjector, requests: RequestCounter): Route[] {
  return [
    { method: 'GET', template: '/_storage/healthz', handle: () => ({ status: 200, body: 'ok' }) },
    { method: 'GET', template: '/_storage/faults', handle: () => ({ status: 200, body: faults.list().map(jsonSafeRule) }) },
    {
      method: 'POST',
      template: '/_storage/faults',
      handle: (ctx) => {
        const body = parse(FaultsBodySchema, ctx.body);
        const rules: FaultRule[] = 'rules' in body ? body.rules : [body];
        for (const rule of rules) {
          try {
            faults.add(rule);
          } catch (err) {
            throw new ApiFailure(400, (err as Error).message);
          }
        }
        return { status: 200, body: faults.list().map(jsonSafeRule) };
      },
    },
    {
      method: 'DELETE',
      template: '/_storage/faults',
      handle: () => {
        faults.clear();
        return { status: 200, body: [] };
      },
    },
    { method: 'GET', template: '/_storage/requests', handle: () => ({ status: 200, body: { total: requests.total(), calls: requests.snapshot() } }) },
    {
      method: 'DELETE',
      template: '/_storage/requests',
      handle: () => {
        requests.reset();
        return { status: 200, body: { total: 0, calls: {} } };
      },
    },
    {
      method: 'POST',
      template: '/_storage/tokens/expire',
      handle: () => {
        auth.expireAll();
        return { status: 200, body: { expired: true } };
      },
    },
    { method: 'GET', template: '/_storage/state', handle: () => ({ status: 200, body: state.snapshot() }) },
    {
      method: 'POST',
      template: '/_storage/nodes',
      handle: async (ctx) => {
        const data = parse(AddNodeSchema, ctx.body);
        return { status: 200, body: await state.addNode(data.name, data.labels) };
      },
    },
    {
      method: 'DELETE',
      template: '/_storage/nodes/{id}',
      handle: async (ctx) => {
        await state.removeNode(ctx.params.id);
        return { status: 200, body: { deleted: ctx.params.id } };
      },
    },
    {
      method: 'POST',
      template: '/_storage/volumes/{id}/share',
      handle: async (ctx) => ({ status: 200, body: await state.shareVolume(ctx.params.id, parse(ShareSchema, ctx.body).endpoint) }),
    },
    {
      method: 'POST',
      template: '/_storage/volumes/{id}/failover',
      handle: async (ctx) => {
        const data = parse(FailoverSchema, ctx.body);
        return {
          status: 200,
          body: await state.failoverVolume(ctx.params.id, {
            ...(data.endpoint === undefined ? {} : { endpoint: data.endpoint }),
            ...(data.inProgress === undefined ? {} : { inProgress: data.inProgress }),
          }),
        };
      },
    },
    {
      method: 'POST',
      template: '/_storage/volumes/{id}/unshare',
      handle: async (ctx) => ({ status: 200, body: await state.unshareVolume(ctx.params.id) }),
    },
  ];
}

function jsonSafeRule(rule: FaultRule & { remaining: number }): FaultRule & { remaining: number } {
  return { ...rule, remaining: Number.isFinite(rule.remaining) ? rule.remaining : -1 };
}
