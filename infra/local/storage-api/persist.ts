/**
 * Durable state for the embedded control plane: the whole state as one JSON file, written atomically
 * (write a temporary file, fsync it, rename it over the old one). Writes are coalesced: a caller waits
 * for the first write that starts after its mutation, so a burst of mutations costs few writes.
 */
import { open, readFile, rename, rm } from 'node:fs/promises';

/**
 * Coalescing atomic writer of one JSON file.
 *
 * @example
 * const file = new JsonFile('/tmp/state.json', () => state.snapshot());
 * await file.save(); // resolves once a write containing the current state is on disk
 */
export class JsonFile<T> {
  readonly path: string;
  #snapshot: () => T;
  /** A write requested but not yet started: it will include every mutation made until it starts. */
  #queued: Promise<void> | undefined;
  /** The last write started (settled or not). */
  #tail: Promise<void> = Promise.resolve();
  #writes = 0;

  constructor(path: string, snapshot: () => T) {
    this.path = path;
    this.#snapshot = snapshot;
  }

  /** Writes done so far. */
  get writes(): number {
    return this.#writes;
  }

  /** Read and parse the file; `undefined` when it does not exist. */
  async load(): Promise<T | undefined> {
    try {
      return JSON.parse(await readFile(this.path, 'utf8')) as T;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw err;
    }
  }

  /** Persist the current state; resolves when a write that started after this call has finished. */
  save(): Promise<void> {
    if (this.#queued !== undefined) return this.#queued;
    const write = this.#tail.then(() => {
      this.#queued = undefined;
      return this.#write();
    });
    this.#queued = write;
    this.#tail = write.catch(() => undefined);
    return write;
  }

  /** Wait for every write requested so far. */
  async flush(): Promise<void> {
    await this.#tail;
  }

  async #write(): Promise<void> {
    const text = `${JSON.stringify(this.#snapshot(), null, 1)}\n`;
    const tmp = `${this.path}.${process.pid}.tmp`;
    const handle = await open(tmp, 'w');
    try {
      await handle.writeFile(text, 'utf8');
      await handle.datasync();
    } finally {
      await handle.close();
    }
    try {
      await rename(tmp, this.path);
    } catch (err) {
      await rm(tmp, { force: true });
      throw err;
    }
    this.#writes++;
  }
}
