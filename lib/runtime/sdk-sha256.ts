/**
 * The SHA-256 every AWS SDK client of claimflow signs its requests with: the SDK's own native one, except that
 * an HMAC keyed by bytes is keyed by a `KeyObject` made once per key.
 *
 * SigV4 computes one HMAC per request keyed by the day's signing key, a `Uint8Array` the signer derives once
 * and caches. Node 24.21's `createHmac` first asks whether its key is a `KeyObject` or a `CryptoKey` by
 * reading a native brand that throws for anything else, so a key given as bytes costs two thrown and caught
 * errors, stack traces included: ~33 µs an HMAC on this machine, against ~6 µs for the same HMAC keyed by a
 * `KeyObject` or a string (and ~6 µs for bytes on Node 20). The `KeyObject` for a key is kept in a `WeakMap`
 * under the key's own array, so it lives no longer than the signer's cache keeps the array, and a key the
 * signer stops using goes with it; it is used only while the array still holds the bytes it was made from.
 * The signer's HMACs keyed by strings (the credentials' fingerprint, each request; the first step of the
 * day's key) go to `createHmac` as they are, the fast path already; the key's later steps, once a day, are
 * keyed by bytes like the signature.
 *
 * Behaves as `@smithy/core`'s `Sha256` (`Checksum`): no secret (or an empty string, or null) is a plain hash,
 * empty bytes an HMAC; `digest()` of a plain hash may be called more than once and `update()` may follow it;
 * an HMAC is finished by its digest.
 *
 * @example
 * new DynamoDBClient({ sha256: Sha256 }); // every client of ours: sdkClientConfig() (sdk-client.ts)
 */
import { createHash, createHmac, createSecretKey, type Hash, type Hmac, type KeyObject } from 'node:crypto';

type Secret = string | ArrayBuffer | ArrayBufferView;

/** Per key array: a copy of the bytes its `KeyObject` was made from, and the `KeyObject`. */
const keyObjects = new WeakMap<object, { bytes: Buffer; key: KeyObject }>();

export class Sha256 {
  readonly digestLength = 32;
  readonly #secret: Secret | undefined;
  #hash: Hash | Hmac;
  #finished = false;

  constructor(secret?: Secret) {
    this.#secret = secret;
    this.#hash = start(secret);
  }

  update(data: Uint8Array): void {
    if (this.#finished) throw new Error('Attempted to update an already finished hash.');
    this.#hash.update(data);
  }

  digest(): Promise<Uint8Array> {
    let out: Buffer;
    if (this.#secret) {
      this.#finished = true;
      out = this.#hash.digest();
    } else {
      out = (this.#hash as Hash).copy().digest();
    }
    return Promise.resolve(new Uint8Array(out.buffer, out.byteOffset, out.byteLength));
  }

  reset(): void {
    this.#hash = start(this.#secret);
    this.#finished = false;
  }
}

function start(secret: Secret | undefined): Hash | Hmac {
  if (!secret) return createHash('sha256');
  if (typeof secret === 'string') return createHmac('sha256', secret);
  return createHmac('sha256', keyObjectOf(secret));
}

/** The `KeyObject` of `secret`'s bytes as they are now (an array changed since is keyed again). */
function keyObjectOf(secret: ArrayBuffer | ArrayBufferView): KeyObject {
  const view = ArrayBuffer.isView(secret)
    ? Buffer.from(secret.buffer, secret.byteOffset, secret.byteLength)
    : Buffer.from(secret);
  const known = keyObjects.get(secret);
  if (known !== undefined && known.bytes.equals(view)) return known.key;
  const bytes = Buffer.alloc(view.byteLength); // its own memory, not a slice of Buffer's shared pool
  view.copy(bytes);
  const key = createSecretKey(bytes);
  keyObjects.set(secret, { bytes, key });
  return key;
}
