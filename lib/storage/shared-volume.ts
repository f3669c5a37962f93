/**
 * Which volumes are Kubernetes shared (RWX) volumes, and the `host:port` parsing they rely on
 * (api-manager `toSharedVolume`, `SplitAddressPort`; reference storageos.md §1.3).
 */
import { LABELS, type SharedVolume, type Volume } from './types.ts';

/** Host and port of a `host:port` endpoint. */
export interface HostPort {
  host: string;
  port: number;
}

/**
 * Go's `net.SplitHostPort` followed by `strconv.Atoi` on the port: accepts `host:port`, `[v6]:port`,
 * `[v6%zone]:port` and `:port`; `undefined` for a missing or empty port, too many colons, or misused
 * brackets. No range check on the port, as upstream.
 */
export function splitHostPort(endpoint: string): HostPort | undefined {
  const colon = endpoint.lastIndexOf(':');
  if (colon < 0) return undefined;
  let host = endpoint.slice(0, colon);
  const portText = endpoint.slice(colon + 1);
  if (host.startsWith('[')) {
    const end = host.indexOf(']');
    if (end !== host.length - 1) return undefined;
    host = host.slice(1, end);
  } else if (host.includes('[') || host.includes(']') || host.includes(':')) {
    return undefined;
  }
  if (!/^[+-]?\d+$/.test(portText)) return undefined;
  return { host, port: Number.parseInt(portText, 10) };
}

/**
 * A volume as a {@link SharedVolume}, or `undefined` when it does not qualify: any of the three CSI
 * labels is empty (not Kubernetes), `nfs.serviceEndpoint` is absent (not shared) or does not parse.
 */
export function toSharedVolume(volume: Volume): SharedVolume | undefined {
  const serviceName = volume.labels[LABELS.pvName] ?? '';
  const pvcName = volume.labels[LABELS.pvcName] ?? '';
  const namespace = volume.labels[LABELS.pvcNamespace] ?? '';
  if (serviceName === '' || pvcName === '' || namespace === '') return undefined;
  const internalEndpoint = volume.nfsServiceEndpoint;
  if (internalEndpoint === null || splitHostPort(internalEndpoint) === undefined) return undefined;
  return {
    id: volume.id,
    namespaceID: volume.namespaceID,
    serviceName,
    pvcName,
    namespace,
    internalEndpoint,
    externalEndpoint: volume.labels[LABELS.nfsMountEndpoint] ?? '',
    version: volume.version,
  };
}
