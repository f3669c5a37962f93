/** The gates composed: each gate decides whether the next runs. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { backoff } from '../../../../lib/runtime/gates/backoff.ts';
import { budget } from '../../../../lib/runtime/gates/budget.ts';
import { deadline } from '../../../../lib/runtime/gates/deadline.ts';
import { parse } from '../../../../lib/runtime/gates/parse.ts';
import { reconcile } from '../../../../lib/runtime/gates/reconcile.ts';
import { synced } from '../../../../lib/runtime/gates/synced.ts';
import { runGates } from '../../../../lib/runtime/job.ts';
import { fakeRuntime, job } from './fakes.ts';

test('runGates: each gate decides whether the next runs', async () => {
  const { rt } = fakeRuntime({ synced: false });
  const outcome = await runGates([deadline(rt), parse(rt), synced(rt), backoff(rt), budget(rt), reconcile(rt)], job(rt));
  assert.equal(outcome.kind, 'wait');
});
