import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createMetrics } from '../../../lib/runtime/observability.ts';

test('a flush with nothing stored is quiet; other Powertools warnings still reach the console', (t) => {
  const warned: string[] = [];
  t.mock.method(console, 'warn', (...args: unknown[]) => void warned.push(String(args[0])));
  const metrics = createMetrics('binder');
  metrics.publishStoredMetrics(); // nothing stored
  assert.deepEqual(warned, []);
  metrics.addDimension('', 'x'); // an invalid dimension: Powertools warns
  assert.equal(warned.length, 1);
  assert.match(warned[0], /dimension/i);
});
