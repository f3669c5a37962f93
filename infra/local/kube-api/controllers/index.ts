/**
 * The cluster-side controllers the emulator runs (the kube-controller-manager parts storage controllers
 * rely on). Each reacts to store events off the write path and can be disabled by its name.
 */
import type { ClusterController } from '../types.ts';
import { clusterRoleAggregationController } from './clusterrole-aggregation.ts';
import { endpointsController } from './endpoints.ts';
import { DEFAULT_EVENT_TTL_MS, eventTtlController } from './event-ttl.ts';
import { garbageCollectorController } from './garbage-collector.ts';
import { namespaceController } from './namespace.ts';
import { pvcProtectionController, pvProtectionController } from './protection.ts';

/** The controller names, for `disableControllers`. */
export const CONTROLLER_NAMES = ['garbage-collector', 'pvc-protection', 'pv-protection', 'endpoints', 'namespace', 'event-ttl', 'clusterrole-aggregation'] as const;

export interface ClusterControllerOptions {
  /** `--event-ttl`: Events go this long after their last write (default 1 h). */
  eventTtlMs?: number;
}

/** Creates one instance of every cluster controller. */
export function createClusterControllers(options: ClusterControllerOptions = {}): ClusterController[] {
  return [
    garbageCollectorController(), pvcProtectionController(), pvProtectionController(), endpointsController(), namespaceController(),
    eventTtlController(options.eventTtlMs ?? DEFAULT_EVENT_TTL_MS), clusterRoleAggregationController(),
  ];
}

export { podUsesClaim } from './protection.ts';
export { FOREGROUND_FINALIZER, ORPHAN_FINALIZER } from './garbage-collector.ts';
