import { test } from 'node:test';
import assert from 'node:assert/strict';
import { canonicalQuantity, compareQuantities, quantityBytes, parseQuantity, QuantityError } from '../../../lib/kube/quantity.ts';

// Canonical forms as the API server re-emits them (apimachinery quantity_test.go cases and the reference).
const canonical: Array<[string | number, string]> = [
  ['1Gi', '1Gi'], ['1.5Gi', '1536Mi'], ['1024Mi', '1Gi'], ['1.5', '1500m'], ['500M', '500M'],
  ['1073741824', '1073741824'], [1073741824, '1073741824'], ['1000000000', '1G'], ['0', '0'], ['0Gi', '0'],
  ['100m', '100m'], ['0.1', '100m'], ['1000', '1k'], ['1e3', '1e3'], ['1200', '1200'], ['512Ki', '512Ki'],
  ['1536', '1536'], ['1.5Ki', '1536'], ['1024', '1024'], ['1Ki', '1Ki'], ['2048Ki', '2Mi'], ['-1Gi', '-1Gi'],
  ['5Ei', '5Ei'], ['1024Ei', '1024Ei'], ['1n', '1n'], ['1.1n', '2n'], ['12E', '12E'], ['10Gi', '10Gi'], ['3.5G', '3500M'],
];
for (const [input, expected] of canonical) {
  test(`canonical ${JSON.stringify(input)} → ${expected}`, () => assert.equal(canonicalQuantity(input), expected));
}

for (const bad of ['20Gx', '1GB', '1gi', '1 Gi', '', 'Gi', '.', '1..5', 'abc', '1Gi1']) {
  test(`rejects ${JSON.stringify(bad)}`, () => assert.throws(() => parseQuantity(bad), QuantityError));
}

test('bytes round up and compare exactly', () => {
  assert.equal(quantityBytes('1Gi'), 1073741824n);
  assert.equal(quantityBytes('500m'), 1n);
  assert.equal(quantityBytes('1.5Gi'), 1610612736n);
  assert.ok(compareQuantities('1Gi', '1000M') > 0);
  assert.equal(compareQuantities('1024Mi', '1Gi'), 0);
  assert.ok(compareQuantities('999Mi', '1Gi') < 0);
});

test('a parsed string is kept, frozen, and every answer stays exact past the kept ones', () => {
  const first = parseQuantity('1.5Gi');
  assert.equal(parseQuantity('1.5Gi'), first, 'the same parsed quantity');
  assert.ok(Object.isFrozen(first), 'no caller can change a kept quantity');
  for (let i = 0; i < 3000; i++) assert.equal(quantityBytes(`${i}Ki`), BigInt(i) * 1024n);
  assert.equal(quantityBytes('1.5Gi'), 1610612736n);
  assert.throws(() => parseQuantity('1GB'), QuantityError);
  assert.throws(() => parseQuantity('1GB'), QuantityError, 'a bad string is rejected every time');
  assert.equal(parseQuantity(1536).nanos, 1536n * 1_000_000_000n);
});
