/**
 * The pure decision core: the Service and Endpoints a shared volume wants, when existing ones are
 * "equal", how an unequal one is updated, and what is published (api-manager `shared_volume.go`:
 * `Service`, `Endpoints`, `ServiceIsEqual`, `ServiceUpdate`, `EndpointsIsEqual`, `EndpointsUpdate`,
 * `IsEqual`; `frontend`). Reference storageos.md §1.4–§1.7. No I/O here.
 */
import type { V1EndpointSubset, V1Endpoints, V1OwnerReference, V1Service, V1ServicePort } from '@kubernetes/client-node';
import { splitHostPort } from '../storage/shared-volume.ts';
import type { SharedVolume } from '../storage/types.ts';
import { NFS_PORT, NFS_PORT_NAME, VOLUME_ID_LABEL } from './constants.ts';

/** The NFS server's address as Endpoints need it. */
export interface InternalAddress {
  ip: string;
  port: number;
}

/** `nfs.serviceEndpoint` split into host and port; the host goes into `ip` unchanged (IPv6 unbracketed). */
export function internalAddress(volume: SharedVolume): InternalAddress {
  const parsed = splitHostPort(volume.internalEndpoint);
  // A SharedVolume only exists when its endpoint parsed (toSharedVolume), so this is a contract breach.
  if (parsed === undefined) throw new TypeError(`shared volume ${volume.id} has an unparseable endpoint ${volume.internalEndpoint}`);
  return { ip: parsed.host, port: parsed.port };
}

/** The owner reference to the claim put on the Service (no `controller`, no `blockOwnerDeletion`, as upstream). */
export function claimOwnerReference(claim: { metadata?: { name?: string; uid?: string } }): V1OwnerReference {
  return { apiVersion: 'v1', kind: 'PersistentVolumeClaim', name: claim.metadata?.name ?? '', uid: claim.metadata?.uid ?? '' };
}

/** The desired Service port: `nfs` 2049/TCP → the NFS server's port. */
export function desiredServicePort(volume: SharedVolume): V1ServicePort {
  return { name: NFS_PORT_NAME, port: NFS_PORT, protocol: 'TCP', targetPort: internalAddress(volume).port };
}

/**
 * The Service of a shared volume (§1.5): named after the PV, in the claim's namespace, selector-less
 * ClusterIP (the API server allocates the IP), labelled with the volume id, owned by the claim.
 */
export function desiredService(volume: SharedVolume, owner: V1OwnerReference): V1Service {
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: {
      name: volume.serviceName,
      namespace: volume.namespace,
      labels: { [VOLUME_ID_LABEL]: volume.id },
      ownerReferences: [owner],
    },
    spec: { type: 'ClusterIP', ports: [desiredServicePort(volume)] },
  };
}

/** The desired Endpoints subset: the NFS server's ip and port. */
export function desiredSubset(volume: SharedVolume): V1EndpointSubset {
  const { ip, port } = internalAddress(volume);
  return { addresses: [{ ip }], ports: [{ name: NFS_PORT_NAME, port, protocol: 'TCP' }] };
}

/** The Endpoints of a shared volume (§1.6): same name and namespace as the Service, no owner references. */
export function desiredEndpoints(volume: SharedVolume): V1Endpoints {
  return {
    apiVersion: 'v1',
    kind: 'Endpoints',
    metadata: { name: volume.serviceName, namespace: volume.namespace, labels: { [VOLUME_ID_LABEL]: volume.id } },
    subsets: [desiredSubset(volume)],
  };
}

/** The integer value of an IntOrString target port (a named port counts as 0, like Go's `IntVal`). */
function targetPortInt(port: V1ServicePort): number {
  return typeof port.targetPort === 'number' ? port.targetPort : 0;
}

/**
 * `ServiceIsEqual`: type ClusterIP, exactly one port, and that port is `nfs` 2049/TCP → the internal port.
 * Labels, owners, selector and the ClusterIP are not looked at.
 */
export function serviceIsEqual(volume: SharedVolume, service: V1Service): boolean {
  const ports = service.spec?.ports ?? [];
  if (service.spec?.type !== 'ClusterIP' || ports.length !== 1) return false;
  const [port] = ports as [V1ServicePort];
  return port.name === NFS_PORT_NAME && port.port === NFS_PORT && port.protocol === 'TCP' && targetPortInt(port) === internalAddress(volume).port;
}

/**
 * `ServiceUpdate`: the fetched Service (resourceVersion and ClusterIP kept) with its ports fixed. A port
 * count other than one is replaced by the desired port; otherwise only `ports[0].targetPort` is set (a wrong
 * name, port, protocol or type is left as it is, as upstream).
 */
export function serviceUpdate(volume: SharedVolume, service: V1Service): V1Service {
  const ports = service.spec?.ports ?? [];
  const next: V1ServicePort[] =
    ports.length !== 1 ? [desiredServicePort(volume)] : [{ ...(ports[0] as V1ServicePort), targetPort: internalAddress(volume).port }];
  return { ...service, spec: { ...service.spec, ports: next } };
}

/**
 * `EndpointsIsEqual`: exactly one subset whose first address is the internal ip and whose first port is
 * `nfs`/internal port/TCP. Entries after index 0 are ignored.
 */
export function endpointsIsEqual(volume: SharedVolume, endpoints: V1Endpoints): boolean {
  const subsets = endpoints.subsets ?? [];
  if (subsets.length !== 1) return false;
  const [subset] = subsets as [V1EndpointSubset];
  const address = subset.addresses?.[0];
  const port = subset.ports?.[0];
  if (address === undefined || port === undefined) return false;
  const internal = internalAddress(volume);
  return address.ip === internal.ip && port.name === NFS_PORT_NAME && port.port === internal.port && port.protocol === 'TCP';
}

/**
 * `EndpointsUpdate`: when the shape is not exactly one subset with one address and one port, the subsets
 * are rebuilt; otherwise only `addresses[0].ip` and `ports[0].port` are set.
 */
export function endpointsUpdate(volume: SharedVolume, endpoints: V1Endpoints): V1Endpoints {
  const subsets = endpoints.subsets ?? [];
  const subset = subsets[0];
  if (subsets.length !== 1 || subset?.addresses?.length !== 1 || subset.ports?.length !== 1) {
    return { ...endpoints, subsets: [desiredSubset(volume)] };
  }
  const internal = internalAddress(volume);
  return {
    ...endpoints,
    subsets: [
      {
        ...subset,
        addresses: [{ ...subset.addresses[0]!, ip: internal.ip }],
        ports: [{ ...subset.ports[0]!, port: internal.port }],
      },
    ],
  };
}

/** `frontend`: `<spec.clusterIP>:<ports[0].port>` when the Service has exactly one port, else `""`. */
export function frontend(service: V1Service): string {
  const ports = service.spec?.ports ?? [];
  if (ports.length !== 1) return '';
  return `${service.spec?.clusterIP ?? ''}:${ports[0]!.port}`;
}

/** `IsEqual`: same service name, claim, namespace, internal and external endpoint (the id is the cache key). */
export function sharedVolumeIsEqual(a: SharedVolume, b: SharedVolume): boolean {
  return (
    a.serviceName === b.serviceName &&
    a.pvcName === b.pvcName &&
    a.namespace === b.namespace &&
    a.internalEndpoint === b.internalEndpoint &&
    a.externalEndpoint === b.externalEndpoint
  );
}

/** Whether the mount endpoint must be published: only when it differs from the one the volume carries. */
export function needsPublish(volume: SharedVolume, endpoint: string): boolean {
  return endpoint !== volume.externalEndpoint;
}
