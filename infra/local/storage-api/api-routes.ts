/**
 * The StorageOS v2 subset the embedded control plane serves (reference storageos.md §3.2), with request
 * bodies validated by the client's own wire schemas.
 */
import type { z } from 'zod';
import {
  AuthUserDataSchema,
  CreateNamespaceDataSchema,
  CreateVolumeDataSchema,
  NfsVolumeMountEndpointSchema,
  SetComputeOnlyNodeDataSchema,
  UpdateNodeDataSchema,
} from '../../../lib/storage/storageos/wire.ts';
import type { AuthStore, Session } from './auth.ts';
import { ApiFailure } from './errors.ts';
import type { Route, RouteContext } from './router.ts';
import type { StorageState } from './state.ts';

/** The `/v2` routes over `state`, authenticated by `auth`. */
export function apiRoutes(state: StorageState, auth: AuthStore): Route[] {
  const ignoreVersion = (ctx: RouteContext): boolean => ctx.query.get('ignore-version') === 'true';
  return [
    {
      method: 'POST',
      template: '/v2/auth/login',
      public: true,
      handle(ctx) {
        const { username, password } = parse(AuthUserDataSchema, ctx.body);
        return sessionResult(auth.login(username, password), auth);
      },
    },
    {
      method: 'POST',
      template: '/v2/auth/refresh',
      handle: (ctx) => {
        const fresh = auth.refresh(ctx.session as Session);
        return {
          status: 200,
          body: sessionBody(fresh, auth),
          headers: { authorization: `Bearer ${fresh.token}`, 'authorization-expires-in': String(Math.round(auth.ttlMs / 1000)) },
        };
      },
    },
    { method: 'GET', template: '/v2/namespaces', handle: () => ({ status: 200, body: state.listNamespaces() }) },
    {
      method: 'POST',
      template: '/v2/namespaces',
      handle: async (ctx) => {
        const data = parse(CreateNamespaceDataSchema, ctx.body);
        return { status: 200, body: await state.createNamespace(data.name, data.labels) };
      },
    },
    { method: 'GET', template: '/v2/namespaces/{id}', handle: (ctx) => ({ status: 200, body: state.getNamespace(ctx.params.id) }) },
    {
      method: 'DELETE',
      template: '/v2/namespaces/{id}',
      handle: async (ctx) => {
        await state.deleteNamespace(ctx.params.id, ctx.query.get('version') ?? undefined, ignoreVersion(ctx));
        return { status: 200 };
      },
    },
    {
      method: 'GET',
      template: '/v2/namespaces/{namespaceID}/volumes',
      handle: (ctx) => ({ status: 200, body: state.listVolumes(ctx.params.namespaceID) }),
    },
    {
      method: 'POST',
      template: '/v2/namespaces/{namespaceID}/volumes',
      handle: async (ctx) => {
        const data = parse(CreateVolumeDataSchema, ctx.body);
        if (data.namespaceID !== ctx.params.namespaceID) throw new ApiFailure(400, 'namespaceID in the body does not match the path');
        const volume = await state.createVolume(ctx.params.namespaceID, {
          name: data.name,
          fsType: data.fsType,
          sizeBytes: data.sizeBytes,
          ...(data.description === undefined ? {} : { description: data.description }),
          ...(data.labels === undefined ? {} : { labels: data.labels }),
        });
        return { status: 200, body: volume };
      },
    },
    {
      method: 'GET',
      template: '/v2/namespaces/{namespaceID}/volumes/{id}',
      handle: (ctx) => ({ status: 200, body: state.getVolume(ctx.params.namespaceID, ctx.params.id) }),
    },
    {
      method: 'DELETE',
      template: '/v2/namespaces/{namespaceID}/volumes/{id}',
      handle: async (ctx) => {
        await state.deleteVolume(ctx.params.namespaceID, ctx.params.id, ctx.query.get('version') ?? undefined, ignoreVersion(ctx));
        return { status: 200 };
      },
    },
    {
      method: 'PUT',
      template: '/v2/namespaces/{namespaceID}/volumes/{id}/nfs/mount-endpoint',
      handle: async (ctx) => {
        const data = parse(NfsVolumeMountEndpointSchema, ctx.body);
        await state.setMountEndpoint(ctx.params.namespaceID, ctx.params.id, data.mountEndpoint, data.version, ignoreVersion(ctx));
        return { status: 200 };
      },
    },
    { method: 'GET', template: '/v2/nodes', handle: () => ({ status: 200, body: state.listNodes() }) },
    { method: 'GET', template: '/v2/nodes/{id}', handle: (ctx) => ({ status: 200, body: state.getNode(ctx.params.id) }) },
    {
      method: 'PUT',
      template: '/v2/nodes/{id}',
      handle: async (ctx) => {
        const data = parse(UpdateNodeDataSchema, ctx.body);
        return { status: 200, body: await state.updateNode(ctx.params.id, data.labels ?? {}, data.version, ignoreVersion(ctx)) };
      },
    },
    {
      method: 'PUT',
      template: '/v2/nodes/{id}/compute-only',
      handle: async (ctx) => {
        const data = parse(SetComputeOnlyNodeDataSchema, ctx.body);
        return { status: 200, body: await state.setComputeOnly(ctx.params.id, data.computeOnly, data.version, ignoreVersion(ctx)) };
      },
    },
  ];
}

/** Validate a request body; 400 with the first problem when it does not fit. */
export function parse<S extends z.ZodType>(schema: S, body: unknown): z.output<S> {
  const result = schema.safeParse(body ?? {});
  if (!result.success) {
    const issue = result.error.issues[0];
    throw new ApiFailure(400, `invalid request body: ${issue.path.join('.') || '(root)'}: ${issue.message}`);
  }
  return result.data;
}

function sessionBody(session: Session, auth: AuthStore): unknown {
  const now = new Date().toISOString();
  const expiresInSeconds = Math.round(auth.ttlMs / 1000);
  return {
    id: auth.userID,
    username: session.username,
    isAdmin: true,
    groups: [],
    createdAt: now,
    updatedAt: now,
    version: 'MQ',
    session: { expiresInSeconds, token: session.token },
  };
}

function sessionResult(session: Session, auth: AuthStore) {
  return {
    status: 200,
    body: sessionBody(session, auth),
    headers: { authorization: `Bearer ${session.token}`, 'authorization-expires-seconds': String(Math.round(auth.ttlMs / 1000)) },
  };
}
