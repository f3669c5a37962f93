/**
 * The watch history: a ring of the most recent {@link StoreEvent}s in revision order, the emulator's
 * stand-in for etcd's revision log / the watch cache. Resuming from a revision older than the ring
 * holds is 410 Expired, as after an etcd compaction.
 */
import type { StoreEvent } from './types.ts';

export class RevisionLog {
  readonly #capacity: number;
  readonly #ring: (StoreEvent | undefined)[];
  #start = 0;
  #size = 0;
  /** Every event with revision ≤ this is no longer available. */
  #compacted: number;

  constructor(capacity: number, compactedRevision = 0) {
    this.#capacity = Math.max(1, capacity);
    this.#ring = new Array(this.#capacity);
    this.#compacted = compactedRevision;
  }

  /** The newest revision that cannot be resumed from (resuming needs `rv >= compacted`). */
  get compacted(): number {
    return this.#compacted;
  }

  append(event: StoreEvent): void {
    if (this.#size === this.#capacity) {
      this.#compacted = this.#ring[this.#start]!.revision;
      this.#ring[this.#start] = event;
      this.#start = (this.#start + 1) % this.#capacity;
    } else {
      this.#ring[(this.#start + this.#size) % this.#capacity] = event;
      this.#size++;
    }
  }

  /** True when every event after `revision` is still held. */
  covers(revision: number): boolean {
    return revision >= this.#compacted;
  }

  /** Events with revision > `revision`, oldest first (caller checks {@link covers} first). */
  since(revision: number): StoreEvent[] {
    const out: StoreEvent[] = [];
    // binary search for the first event after `revision`
    let lo = 0;
    let hi = this.#size;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (this.#ring[(this.#start + mid) % this.#capacity]!.revision <= revision) lo = mid + 1; else hi = mid;
    }
    for (let i = lo; i < this.#size; i++) out.push(this.#ring[(this.#start + i) % this.#capacity]!);
    return out;
  }
}
