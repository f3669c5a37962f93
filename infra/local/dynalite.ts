/**
 * dynalite, the local DynamoDB, started the one way every local stack, fault proxy and test uses it, with
 * the one piece of DynamoDB it lacks and claimflow relies on, and its expression parses kept (below,
 * `memoizeParser`: the largest part of its CPU was parsing the same expressions again):
 *
 * `ReturnValuesOnConditionCheckFailure: 'ALL_OLD'` on PutItem, UpdateItem and DeleteItem. DynamoDB then
 * returns the item that made the condition fail inside the `ConditionalCheckFailedException` (as `Item`, in
 * attribute-value form), so a refused write needs no read to learn what won (lib/state/cache.ts). dynalite
 * 4 drops the unknown parameter and answers without the item. Here the parameter is accepted (validated
 * as DynamoDB does: `ALL_OLD` or `NONE`) and the refused item is put in the error. Without this, the local
 * figures count a GetItem per refused write that AWS does not send.
 */
import { createRequire } from 'node:module';
import type { Server } from 'node:http';
import { parse as legacyUrlParse } from 'node:url';

const require = createRequire(import.meta.url);

type Conditional = (data: Record<string, unknown>, existingItem: Record<string, unknown> | undefined) => (Error & { body?: Record<string, unknown> }) | null | undefined;

let patched = false;

/** Teaches dynalite `ReturnValuesOnConditionCheckFailure` and to keep its parses (idempotent; see the module comment). */
export function patchDynalite(): void {
  if (patched) return;
  patched = true;
  const parameter = { type: 'String', enum: ['ALL_OLD', 'NONE'] };
  for (const action of ['putItem', 'updateItem', 'deleteItem']) {
    const validation = require(`dynalite/validations/${action}.js`) as { types: Record<string, unknown> };
    validation.types.ReturnValuesOnConditionCheckFailure = parameter;
  }
  const db = require('dynalite/db/index.js') as { checkConditional: Conditional };
  const checkConditional = db.checkConditional;
  db.checkConditional = (data, existingItem) => {
    const refused = checkConditional(data, existingItem);
    if (refused?.body && existingItem && data.ReturnValuesOnConditionCheckFailure === 'ALL_OLD') refused.body.Item = existingItem;
    return refused;
  };
  for (const [name, valueDependent] of [
    ['conditionParser', /attribute_type|between/i],
    ['updateParser', undefined],
    ['projectionParser', undefined],
  ] as const) {
    memoizeParser(require(`dynalite/db/${name}.js`) as ExpressionParser, valueDependent);
  }
  settleUrlParseWarning();
}

/**
 * dynalite reads every request's URL with the legacy `url.parse()`. Node warns of that once per process
 * (DEP0169), but only for a call from outside node_modules: until one such call has warned, every call from
 * inside node_modules walks the stack to find out where it came from, which made `url.parse()` one of
 * dynalite's costliest functions. One call from here, with deprecation warnings silenced for its length,
 * is that first call, so the warning is neither printed nor looked for again. It is the process's one
 * DEP0169: a `url.parse()` of our own in the same process (a test, the in-process stack) would not warn
 * either; none exists, and the functions' threads each have their own.
 */
function settleUrlParseWarning(): void {
  // Under --no-deprecation the flag is already set, and read-only.
  if (process.noDeprecation) {
    legacyUrlParse('/');
    return;
  }
  const own = Object.hasOwn(process, 'noDeprecation');
  const before = process.noDeprecation;
  process.noDeprecation = true;
  try {
    legacyUrlParse('/');
  } finally {
    if (own) process.noDeprecation = before;
    else delete (process as { noDeprecation?: boolean }).noDeprecation;
  }
}

type AttributeValue = Record<string, unknown>;
interface ParseContext {
  attrNames?: Record<string, string>;
  attrVals?: Record<string, AttributeValue>;
  unusedAttrNames: Record<string, boolean>;
  unusedAttrVals: Record<string, boolean>;
}
interface ExpressionParser {
  parse(input: string, options: { context: ParseContext }): unknown;
}
/** A parse kept for its expression: the tree, the values it holds (by key), the names and values it used. */
interface ParsedExpression {
  tree: unknown;
  values: Map<AttributeValue, string>;
  usedNames: string[];
  usedValues: string[];
}

/** Expressions parsed (`parsed`) and parses reused (`reused`) since the process started, for tests. */
export const expressionParses = { parsed: 0, reused: 0 };

/** Expressions kept per parser at most (a full memo starts again). */
const MAX_PARSED_EXPRESSIONS = 1024;
/** DynamoDB's attribute value types, in the order dynalite's parsers test them. */
const VALUE_TYPES = ['S', 'N', 'B', 'NULL', 'BOOL', 'SS', 'NS', 'BS', 'L', 'M'];

/**
 * Teaches one of dynalite's expression parsers to parse each expression once.
 *
 * dynalite validates every request's expressions by parsing them with PEG parsers, at roughly a
 * microsecond per character tried: for the cache's conditional PutItem and the lease's and the budget's
 * UpdateItems, that parse was the largest single part of the stand-in's CPU (a fifth of it in the
 * provisioner bench). The tree a parse returns depends on the expression, the attribute names and, of the
 * values, only their types, except where a parser reads a value's content (`valueDependent`:
 * `attribute_type`, `BETWEEN`, never kept). So it is kept per expression, names and value types, holding
 * the first request's values where the parse put them; each later request gets a copy of the tree holding
 * its own values instead, and marks the same names and values used (what dynalite's unused-name check
 * reads). A parse that throws (a syntax error) is not kept, nor one whose tree does not hold every value it
 * used by reference; one answering a semantic error (a reserved word, an undefined name, an operand of the
 * wrong type) is a string that depends only on what the key holds, and is kept like any other.
 */
function memoizeParser(parser: ExpressionParser, valueDependent: RegExp | undefined): void {
  const parse = parser.parse.bind(parser);
  const kept = new Map<string, ParsedExpression | null>();
  parser.parse = (input, options) => {
    const { context } = options;
    if (valueDependent?.test(input)) return (expressionParses.parsed++, parse(input, options));
    const names = context.attrNames ?? {};
    const values = context.attrVals ?? {};
    let key = `${input}\u0000${JSON.stringify(names)}`;
    for (const valueKey in values) key += `\u0000${valueKey}:${VALUE_TYPES.find((type) => values[valueKey]![type] != null)}`;
    const parsed = kept.get(key);
    if (parsed === null) return (expressionParses.parsed++, parse(input, options));
    if (parsed) {
      expressionParses.reused++;
      for (const name of parsed.usedNames) delete context.unusedAttrNames[name];
      for (const name of parsed.usedValues) delete context.unusedAttrVals[name];
      return copyTree(parsed.tree, parsed.values, (value) => values[parsed.values.get(value)!]!);
    }
    // The first parse: with every name and value unused, to learn which it uses.
    expressionParses.parsed++;
    const unusedAttrNames = Object.fromEntries(Object.keys(names).map((name) => [name, true]));
    const unusedAttrVals = Object.fromEntries(Object.keys(values).map((name) => [name, true]));
    const tree = parse(input, { context: { ...context, unusedAttrNames, unusedAttrVals } });
    const usedNames = Object.keys(names).filter((name) => !(name in unusedAttrNames));
    const usedValues = Object.keys(values).filter((name) => !(name in unusedAttrVals));
    for (const name of usedNames) delete context.unusedAttrNames[name];
    for (const name of usedValues) delete context.unusedAttrVals[name];
    const byValue = new Map(usedValues.map((name) => [values[name]!, name]));
    const held = new Set<AttributeValue>();
    const copy = copyTree(tree, byValue, (value) => (held.add(value), value));
    if (kept.size >= MAX_PARSED_EXPRESSIONS) kept.clear();
    kept.set(key, held.size === byValue.size ? { tree: copy, values: byValue, usedNames, usedValues } : null);
    return tree;
  };
}

/**
 * A deep copy of a parse tree (arrays and objects, each with its prototype: plain or none), each attribute
 * value of `values` it holds replaced by `swap(value)`.
 */
function copyTree(node: unknown, values: Map<AttributeValue, string>, swap: (value: AttributeValue) => AttributeValue): unknown {
  if (node === null || typeof node !== 'object') return node;
  if (values.has(node as AttributeValue)) return swap(node as AttributeValue);
  if (Array.isArray(node)) return node.map((child) => copyTree(child, values, swap));
  // The parsers keep some maps without a prototype (`nestedPaths`, `pathHeads`): so does the copy.
  const copy = Object.create(Object.getPrototypeOf(node) as object | null) as Record<string, unknown>;
  for (const [field, child] of Object.entries(node)) copy[field] = copyTree(child, values, swap);
  return copy;
}

/** Requests each dynalite server is answering (counted from its creation, for {@link stopDynalite}). */
const answering = new WeakMap<Server, { count: number; drained: Array<() => void> }>();

/** A dynalite server (in memory, tables created at once), patched, not yet listening. */
export function createDynalite(): Server {
  patchDynalite();
  const dynalite = require('dynalite') as (options: { createTableMs?: number; deleteTableMs?: number; updateTableMs?: number }) => Server;
  const server = dynalite({ createTableMs: 0, deleteTableMs: 0, updateTableMs: 0 });
  const state = { count: 0, drained: [] as Array<() => void> };
  answering.set(server, state);
  server.on('request', (_request, response) => {
    state.count++;
    response.once('close', () => {
      if (--state.count === 0) for (const resolve of state.drained.splice(0)) resolve();
    });
  });
  return server;
}

/**
 * Stops a dynalite server without cutting a request it is working on: it takes no new connection, the
 * requests under way are answered (for `graceMs` at most), then every connection is closed and its database
 * with them. A connection cut mid-request leaves dynalite reading a closed database, and it throws that
 * error where no one can catch it (an uncaught exception in whatever process it runs in).
 */
export async function stopDynalite(server: Server, graceMs = 2000): Promise<void> {
  // close() also closes the idle connections.
  const closed = new Promise<void>((resolve) => server.close(() => resolve()));
  const state = answering.get(server);
  if (state && state.count > 0) {
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([new Promise<void>((resolve) => state.drained.push(resolve)), new Promise<void>((resolve) => (timer = setTimeout(resolve, graceMs)))]);
    clearTimeout(timer);
  }
  // Kept-alive connections would hold the close open: nothing is being answered on them now.
  server.closeAllConnections();
  await closed;
}

/** {@link createDynalite}, listening on `port` (default: any free one) of 127.0.0.1. */
export async function listenDynalite(port = 0): Promise<Server> {
  const server = createDynalite();
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => resolve());
  });
  return server;
}
