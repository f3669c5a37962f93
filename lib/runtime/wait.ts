/**
 * How a record waits before its next attempt. SQS FIFO has no per-message delay, so a wait is either
 * the message kept invisible (ChangeMessageVisibility; the record is reported failed so Lambda does not
 * delete it, and the FIFO group stays blocked behind it — per-object order is kept) or the key parked in
 * the control table for the resync function to re-enqueue when due (the message is deleted).
 *
 * Visibility is used only while it is safe: every receive counts toward the queue's `maxReceiveCount`
 * and a message's visibility may not reach past 12 h after its first receive. Keeping one receive in
 * reserve (for a crash or a timeout) means "retry forever" never ends in the DLQ.
 */

/** SQS: the longest total visibility after the first receive. */
export const MAX_VISIBILITY_SPAN_MS = 12 * 3600 * 1000;
/**
 * The longest wait held in visibility by default. A hidden message keeps its object's FIFO group locked, so
 * a fresh event for the object waits behind it; longer waits are parked (the message deleted) instead.
 */
export const DEFAULT_MAX_VISIBILITY_DELAY_MS = 30_000;

/** SQS: the largest single ChangeMessageVisibility value. */
export const MAX_VISIBILITY_TIMEOUT_S = 43_200;

export interface WaitInput {
  delayMs: number;
  now: number;
  /** `ApproximateReceiveCount` of this delivery (1 on the first). */
  receiveCount: number;
  /** `ApproximateFirstReceiveTimestamp` (epoch ms). */
  firstReceiveAt: number;
  /** The queue's redrive `maxReceiveCount`. */
  maxReceiveCount: number;
  /** Waits longer than this are parked even when visibility could hold them ({@link DEFAULT_MAX_VISIBILITY_DELAY_MS}). */
  maxVisibilityDelayMs: number;
}

export type WaitPlan = { via: 'visibility'; visibilityTimeoutS: number } | { via: 'park'; dueAt: number };

/** Decides between visibility and parking. */
export function planWait(input: WaitInput): WaitPlan {
  const delayMs = Math.max(0, input.delayMs);
  const dueAt = input.now + delayMs;
  // The next delivery is receive number receiveCount+1; keep one more in reserve below maxReceiveCount.
  const receivesLeft = input.maxReceiveCount - (input.receiveCount + 1);
  const fitsSpan = dueAt - input.firstReceiveAt <= MAX_VISIBILITY_SPAN_MS - 60_000;
  if (receivesLeft >= 1 && fitsSpan && delayMs <= input.maxVisibilityDelayMs) {
    return { via: 'visibility', visibilityTimeoutS: Math.min(MAX_VISIBILITY_TIMEOUT_S, Math.ceil(delayMs / 1000)) };
  }
  return { via: 'park', dueAt };
}
