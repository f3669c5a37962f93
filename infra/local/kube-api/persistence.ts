/**
 * Optional persistence (`--data <file>`): the revision counter and every object, written shortly after each
 * change and on stop. After a restart the revision continues; resourceVersions from before are valid for
 * reads and updates, but watches from before the restart get 410 (the history is not persisted).
 */
import { existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import type { KubeObject } from './types.ts';
import type { MemoryStore } from './store.ts';

/** The data file's content. */
export interface DataFile {
  revision: number;
  objects: Array<{ resource: string; object: KubeObject }>;
}

/** Reads a data file; undefined when it does not exist. Throws on a corrupt file. */
export function loadDataFile(path: string): DataFile | undefined {
  if (!existsSync(path)) return undefined;
  const parsed = JSON.parse(readFileSync(path, 'utf8')) as DataFile;
  if (typeof parsed.revision !== 'number' || !Array.isArray(parsed.objects)) throw new Error(`kube-api: ${path} is not an emulator data file`);
  return parsed;
}

/**
 * Saves the store to `path` after changes until the returned stop function runs (which flushes). Saves are
 * debounced by at least `debounceMs` and by four times the last save's duration, so a large store under a
 * write storm spends at most a fifth of its time writing the file.
 */
export function persistTo(store: MemoryStore, path: string, debounceMs = 50): () => void {
  let timer: NodeJS.Timeout | undefined;
  let savedRevision = -1;
  let lastSaveMs = 0;
  const save = (): void => {
    timer = undefined;
    if (savedRevision === store.revision) return;
    const started = performance.now();
    const data: DataFile = { revision: store.revision, objects: store.dump() };
    writeFileSync(`${path}.tmp`, JSON.stringify(data));
    renameSync(`${path}.tmp`, path);
    savedRevision = data.revision;
    lastSaveMs = performance.now() - started;
  };
  const unsubscribe = store.watchRaw(() => {
    timer ??= setTimeout(save, Math.max(debounceMs, 4 * lastSaveMs));
  });
  save();
  return () => {
    unsubscribe();
    if (timer) clearTimeout(timer);
    save();
  };
}
