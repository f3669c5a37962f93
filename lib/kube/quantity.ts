/**
 * Kubernetes resource quantities (`apimachinery/pkg/api/resource/quantity.go`), exact, on bigint.
 *
 * A quantity is kept as an integer count of nano-units plus the format its suffix implied. Parsing rounds
 * up to nano precision, as upstream does; {@link canonicalQuantity} re-emits the canonical form the API
 * server stores (`1.5Gi` → `1536Mi`, `1024Mi` → `1Gi`, `1.5` → `1500m`, `1000000000` → `1G`).
 *
 * @example
 * quantityBytes('1.5Gi');        // 1610612736n
 * canonicalQuantity('1024Mi');   // '1Gi'
 * compareQuantities('1Gi', '1000M') > 0; // true
 */

export type QuantityFormat = 'BinarySI' | 'DecimalSI' | 'DecimalExponent';

export interface Quantity {
  /** The value in nano-units (value × 10⁹), exact. */
  readonly nanos: bigint;
  readonly format: QuantityFormat;
}

/** The grammar error text the API server returns for an unparseable quantity. */
export const QUANTITY_GRAMMAR_ERROR =
  "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'";

export class QuantityError extends Error {
  constructor(message: string = QUANTITY_GRAMMAR_ERROR) {
    super(message);
    this.name = 'QuantityError';
  }
}

const NANO = 1_000_000_000n;
const BINARY_SUFFIXES = ['', 'Ki', 'Mi', 'Gi', 'Ti', 'Pi', 'Ei'];
const DECIMAL_SUFFIXES: Record<string, number> = { n: -9, u: -6, m: -3, '': 0, k: 3, M: 6, G: 9, T: 12, P: 15, E: 18 };
const DECIMAL_BY_EXPONENT = new Map(Object.entries(DECIMAL_SUFFIXES).map(([s, e]) => [e, s]));
const NUMBER = /^([+-]?)([0-9]*)(?:\.([0-9]*))?$/;

const pow = (base: bigint, exp: number): bigint => base ** BigInt(exp);

/**
 * Quantities parsed from strings, kept frozen (a burst compares the same few capacities thousands of times);
 * emptied when full, so a stream of distinct strings costs at most this many entries.
 */
const PARSED = new Map<string, Quantity>();
const PARSED_MAX = 1024;

/** Parses a quantity string (or a JSON number) exactly as the API server's decoder does. */
export function parseQuantity(input: string | number): Quantity {
  if (typeof input === 'number') return parseText(numberText(input));
  const known = PARSED.get(input);
  if (known !== undefined) return known;
  const parsed = Object.freeze(parseText(input));
  if (PARSED.size >= PARSED_MAX) PARSED.clear();
  PARSED.set(input, parsed);
  return parsed;
}

function parseText(text: string): Quantity {
  const match = /^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$/.exec(text);
  if (!match) throw new QuantityError();
  const [, numberPart, suffix] = match;
  const number = NUMBER.exec(numberPart);
  if (!number || (number[2] === '' && (number[3] ?? '') === '')) throw new QuantityError();
  const negative = number[1] === '-';
  const digits = number[2] + (number[3] ?? '');
  const fractionDigits = (number[3] ?? '').length;

  let format: QuantityFormat;
  let base = 10n;
  let exponent: number;
  if (BINARY_SUFFIXES.includes(suffix) && suffix !== '') {
    format = 'BinarySI';
    base = 1024n;
    exponent = BINARY_SUFFIXES.indexOf(suffix);
  } else if (suffix in DECIMAL_SUFFIXES) {
    format = 'DecimalSI';
    exponent = DECIMAL_SUFFIXES[suffix];
  } else if (/^[eE][-+]?[0-9]+$/.test(suffix)) {
    format = 'DecimalExponent';
    exponent = Number(suffix.slice(1));
    if (!Number.isSafeInteger(exponent) || Math.abs(exponent) > 1000) throw new QuantityError();
  } else {
    throw new QuantityError();
  }

  // value = digits × 10^-fractionDigits × base^exponent, in nanos, rounded up (away from zero for the
  // magnitude, as upstream's "round up" on the absolute value).
  let numerator = BigInt(digits || '0') * NANO;
  let denominator = pow(10n, fractionDigits);
  if (exponent >= 0) numerator *= pow(base, exponent);
  else denominator *= pow(base, -exponent);
  let nanos = numerator / denominator;
  if (numerator % denominator !== 0n) nanos += 1n;
  if (negative) nanos = -nanos;
  return { nanos, format };
}

function numberText(value: number): string {
  if (!Number.isFinite(value)) throw new QuantityError();
  const text = String(value);
  // JSON numbers like 1e+21 come out in exponent form; upstream accepts them as DecimalExponent.
  return text.replace(/e\+/, 'e');
}

/** True when `input` parses as a quantity. */
export function isQuantity(input: unknown): boolean {
  if (typeof input !== 'string' && typeof input !== 'number') return false;
  try {
    parseQuantity(input);
    return true;
  } catch {
    return false;
  }
}

/** The canonical string form the API server re-emits (`Quantity.String()`). */
export function formatQuantity(q: Quantity): string {
  const sign = q.nanos < 0n ? '-' : '';
  const magnitude = q.nanos < 0n ? -q.nanos : q.nanos;
  if (magnitude === 0n) return '0';
  let format = q.format;
  if (format === 'BinarySI' && (magnitude < 1024n * NANO || magnitude % NANO !== 0n)) format = 'DecimalSI';

  if (format === 'BinarySI') {
    let n = magnitude / NANO;
    let exp = 0;
    while (exp < 6 && n % 1024n === 0n) {
      n /= 1024n;
      exp++;
    }
    return `${sign}${n}${BINARY_SUFFIXES[exp]}`;
  }
  let mantissa = magnitude;
  let exp = -9;
  while (exp < 18 && mantissa % 1000n === 0n) {
    mantissa /= 1000n;
    exp += 3;
  }
  if (format === 'DecimalExponent') return `${sign}${mantissa}${exp === 0 ? '' : `e${exp}`}`;
  return `${sign}${mantissa}${DECIMAL_BY_EXPONENT.get(exp)}`;
}

/** Parses and re-emits in canonical form; throws {@link QuantityError} on bad input. */
export function canonicalQuantity(input: string | number): string {
  return formatQuantity(parseQuantity(input));
}

/** The value rounded up to whole units (bytes, for storage): `Quantity.Value()`. */
export function quantityValue(input: string | number | Quantity): bigint {
  const q = typeof input === 'object' ? input : parseQuantity(input);
  const whole = q.nanos / NANO;
  return q.nanos % NANO > 0n ? whole + 1n : whole;
}

/** Storage size in bytes (rounded up), the unit every capacity comparison uses. */
export const quantityBytes = quantityValue;

/** `Quantity.Cmp`: negative, zero or positive. */
export function compareQuantities(a: string | number | Quantity, b: string | number | Quantity): number {
  const x = typeof a === 'object' ? a.nanos : parseQuantity(a).nanos;
  const y = typeof b === 'object' ? b.nanos : parseQuantity(b).nanos;
  return x < y ? -1 : x > y ? 1 : 0;
}
