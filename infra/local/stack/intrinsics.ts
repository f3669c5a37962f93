/**
 * Just enough of CloudFormation's intrinsic functions to resolve the template's environment variables
 * and resource references against the local stand-ins: `Ref`, `Fn::GetAtt`, `Fn::Sub`, `Fn::Join`.
 */

/** What a logical id resolves to: its `Ref` value and its `Fn::GetAtt` attributes. */
export interface PhysicalResource {
  ref: string;
  attributes: Record<string, string>;
}

/** Raised for an intrinsic the local stack cannot resolve (unknown logical id, attribute or function). */
export class UnresolvableIntrinsicError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UnresolvableIntrinsicError';
  }
}

export interface ResolveContext {
  resources: ReadonlyMap<string, PhysicalResource>;
  region: string;
  accountId: string;
}

function pseudo(name: string, ctx: ResolveContext): string | undefined {
  switch (name) {
    case 'AWS::Region':
      return ctx.region;
    case 'AWS::AccountId':
      return ctx.accountId;
    case 'AWS::Partition':
      return 'aws';
    case 'AWS::URLSuffix':
      return 'amazonaws.com';
    case 'AWS::StackName':
      return 'local';
    default:
      return undefined;
  }
}

function ref(name: string, ctx: ResolveContext): string {
  const p = pseudo(name, ctx);
  if (p !== undefined) return p;
  const r = ctx.resources.get(name);
  if (!r) throw new UnresolvableIntrinsicError(`Ref ${name}: no such local resource`);
  return r.ref;
}

function getAtt(id: string, attribute: string, ctx: ResolveContext): string {
  const r = ctx.resources.get(id);
  const value = r?.attributes[attribute];
  if (value === undefined) throw new UnresolvableIntrinsicError(`Fn::GetAtt ${id}.${attribute}: not available locally`);
  return value;
}

function sub(template: string, vars: Record<string, unknown>, ctx: ResolveContext): string {
  return template.replace(/\$\{([^}]*)\}/g, (_m, name: string) => {
    if (name.startsWith('!')) return `\${${name.slice(1)}}`; // "${!Literal}" renders as "${Literal}"
    if (name in vars) return String(resolveIntrinsics(vars[name], ctx));
    const dot = name.indexOf('.');
    return dot > 0 && !name.startsWith('AWS::') ? getAtt(name.slice(0, dot), name.slice(dot + 1), ctx) : ref(name, ctx);
  });
}

/**
 * Resolves intrinsic functions in a template value, recursively.
 *
 * @example
 * resolveIntrinsics({ 'Fn::GetAtt': ['BinderQueue', 'Arn'] }, ctx); // 'arn:aws:sqs:eu-west-1:000000000000:…'
 */
export function resolveIntrinsics(value: unknown, ctx: ResolveContext): unknown {
  if (Array.isArray(value)) return value.map((v) => resolveIntrinsics(v, ctx));
  if (value === null || typeof value !== 'object') return value;
  const obj = value as Record<string, unknown>;
  const keys = Object.keys(obj);
  if (keys.length === 1) {
    const [k] = keys;
    const arg = obj[k];
    if (k === 'Ref') return ref(String(arg), ctx);
    if (k === 'Fn::GetAtt') {
      const [id, attribute] = Array.isArray(arg) ? (arg as string[]) : String(arg).split(/\.(.*)/s);
      return getAtt(id, attribute, ctx);
    }
    if (k === 'Fn::Sub') {
      if (typeof arg === 'string') return sub(arg, {}, ctx);
      const [template, vars] = arg as [string, Record<string, unknown>];
      return sub(template, vars ?? {}, ctx);
    }
    if (k === 'Fn::Join') {
      const [sep, parts] = arg as [string, unknown[]];
      return (resolveIntrinsics(parts, ctx) as unknown[]).map(String).join(sep);
    }
    if (k.startsWith('Fn::')) throw new UnresolvableIntrinsicError(`${k} is not supported locally`);
  }
  return Object.fromEntries(keys.map((key) => [key, resolveIntrinsics(obj[key], ctx)]));
}
