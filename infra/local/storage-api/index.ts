/**
 * The embedded local storage control plane (entry point for the local stack and tests).
 */
export { startStorageApi, type StorageApiHandle, type StorageApiOptions } from './server.ts';
export { FaultInjector, type FaultRule } from './faults.ts';
export { StorageState } from './state.ts';
export { RequestCounter } from './counter.ts';
export { AuthStore } from './auth.ts';
