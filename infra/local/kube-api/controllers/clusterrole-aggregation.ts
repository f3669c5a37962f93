/**
 * The ClusterRole aggregation controller (`pkg/controller/clusterroleaggregation`): a ClusterRole with an
 * `aggregationRule` gets as its `rules` the rules of every other ClusterRole matched by any of its
 * `clusterRoleSelectors` (roles of each selector in name order, each rule once), rewritten whenever a
 * ClusterRole changes. The authorizer reads the aggregated `rules` like any other role's.
 */
import type { ClusterController, KubeObject, Store, StoreEvent } from '../types.ts';
import { selectorMatches } from '../kinds/apps.ts';
import { subscribeShared } from './hub.ts';
import { ignoreNotFound, WorkQueue } from './queue.ts';

const CLUSTER_ROLES = 'rbac.authorization.k8s.io/clusterroles';

/** The rules an aggregated ClusterRole should hold (`syncClusterRole`). */
export function aggregatedRules(role: KubeObject, all: KubeObject[]): unknown[] {
  const rules: unknown[] = [];
  const seen = new Set<string>();
  const byName = [...all].sort((a, b) => (a.metadata.name! < b.metadata.name! ? -1 : a.metadata.name! > b.metadata.name! ? 1 : 0));
  for (const selector of role.aggregationRule?.clusterRoleSelectors ?? []) {
    for (const other of byName) {
      if (other.metadata.name === role.metadata.name) continue;
      if (!selectorMatches(selector ?? {}, other.metadata.labels ?? {})) continue;
      for (const rule of Array.isArray(other.rules) ? other.rules : []) {
        const key = JSON.stringify(rule);
        if (seen.has(key)) continue;
        seen.add(key);
        rules.push(structuredClone(rule));
      }
    }
  }
  return rules;
}

/** Creates the aggregation controller. */
export function clusterRoleAggregationController(): ClusterController {
  let unsubscribe: (() => void) | undefined;
  let queue: WorkQueue | undefined;
  return {
    name: 'clusterrole-aggregation',
    start(store: Store): void {
      if (!store.kinds.has(CLUSTER_ROLES)) return;
      queue = new WorkQueue('clusterrole-aggregation', (name) => {
        const role = store.get({ resource: CLUSTER_ROLES, namespace: '', name });
        if (!role?.aggregationRule) return;
        const rules = aggregatedRules(role, store.list(CLUSTER_ROLES));
        if (JSON.stringify(rules) === JSON.stringify(role.rules ?? [])) return;
        ignoreNotFound(() => store.update(CLUSTER_ROLES, { ...role, rules }));
      });
      const q = queue;
      const enqueueAggregated = (): void => {
        for (const r of store.list(CLUSTER_ROLES)) if (r.aggregationRule) q.add(r.metadata.name!);
      };
      unsubscribe = subscribeShared(store, (e: StoreEvent) => {
        if (e.resource === CLUSTER_ROLES) enqueueAggregated();
      });
      enqueueAggregated();
    },
    stop(): void {
      unsubscribe?.();
      queue?.stop();
    },
  };
}
