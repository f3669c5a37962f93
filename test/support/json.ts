/** An API object from client-node's generated client as plain JSON (its models carry `Date`s). */
export function toJson<T>(obj: unknown): T {
  return JSON.parse(JSON.stringify(obj)) as T;
}
