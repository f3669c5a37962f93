/** Gate `parse` as a table: bodies → go on, poison (DLQ), or dropped. */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { parse } from '../../../../lib/runtime/gates/parse.ts';
import { NEXT, fakeRuntime, event, job, parsedJob } from './fakes.ts';

describe('gate parse', () => {
  const sns = (message: unknown) => ({ Type: 'Notification', TopicArn: 'arn:aws:sns:us-east-1:1:t.fifo', Message: JSON.stringify(message) });
  const rows: Array<{ name: string; body: unknown; want: string; poison?: RegExp; metric?: string }> = [
    { name: 'a cluster event goes on', body: event(), want: 'reconciled' },
    { name: 'inside an SNS envelope goes on', body: sns(event()), want: 'reconciled' },
    { name: 'not JSON is poison', body: '{oops', want: 'done', poison: /^body is not JSON/ },
    { name: 'a wrong shape is poison, naming the field', body: { ...event(), resourceVersion: 'x' }, want: 'done', poison: /resourceVersion/ },
    { name: 'a kind the controller does not reconcile is dropped', body: event({ kind: 'Node', key: 'n1' }), want: 'done' },
    { name: 'its own write is skipped', body: event({ writer: 'test' }), want: 'done', metric: 'OwnWriteSkipped' },
    { name: 'another controller’s write goes on', body: event({ writer: 'binder' }), want: 'reconciled' },
  ];
  for (const row of rows) {
    test(row.name, async () => {
      const { rt, calls, counts } = fakeRuntime({ dlqUrl: 'https://sqs.invalid/dlq.fifo' });
      const j = job(rt, row.body);
      const outcome = await parse(rt)(j, async () => NEXT);
      assert.equal(outcome.kind, row.want);
      assert.equal(j.parsed !== undefined, row.want === 'reconciled');
      assert.deepEqual(calls, row.poison ? ['sqs SendMessageCommand'] : []);
      assert.equal(counts.PoisonMessages ?? 0, row.poison ? 1 : 0);
      if (row.metric) assert.equal(counts[row.metric], 1);
    });
  }
  test('poison with no DLQ fails the record', async () => {
    const { rt } = fakeRuntime();
    await assert.rejects(parse(rt)(job(rt, '{oops'), async () => NEXT), /no DLQ_URL/);
  });
  test('the parsed request and backoff id name the key', async () => {
    const { rt } = fakeRuntime();
    const j = await parsedJob(rt);
    assert.deepEqual(j.parsed?.id, { controller: 'test', cluster: 'c1', kind: 'PersistentVolumeClaim', key: 'ns/claim' });
    assert.equal(j.parsed?.request.key, 'ns/claim');
  });
});
