/**
 * The StorageOS v2 wire format (go-api `openapi.yaml` 2.4.0, reference storageos.md §3.3): zod schemas
 * for the bodies the client sends and the objects it reads back. The embedded local control plane
 * validates requests with the same schemas, so both ends agree on the subset they speak.
 *
 * Only the fields the controllers use are declared; unknown fields are ignored on read.
 */
import { z } from 'zod';

/** Path prefix of every API call. */
export const API_PREFIX = '/v2';

/** Default StorageOS API port, appended when the endpoint has none. */
export const DEFAULT_API_PORT = 5705;

const labels = z.record(z.string(), z.string());

/** `Namespace`. */
export const NamespaceSchema = z.object({
  id: z.string(),
  name: z.string(),
  labels: labels.nullish().transform((v) => v ?? {}),
  createdAt: z.string().default(''),
  updatedAt: z.string().default(''),
  version: z.string(),
});
export type ApiNamespace = z.infer<typeof NamespaceSchema>;

/** `NfsConfig` (only the endpoint matters here). */
export const NfsConfigSchema = z.object({
  exports: z.array(z.unknown()).nullish(),
  serviceEndpoint: z.string().nullish(),
});

/** `MasterDeploymentInfo`. */
export const MasterSchema = z.object({
  id: z.string().default(''),
  nodeID: z.string().default(''),
  promotable: z.boolean().default(true),
  health: z.string().default('unknown'),
});

/** `Volume`. `localPath` is an extension of the embedded local control plane. */
export const VolumeSchema = z.object({
  id: z.string(),
  name: z.string(),
  description: z.string().default(''),
  attachedOn: z.string().default(''),
  namespaceID: z.string(),
  labels: labels.nullish().transform((v) => v ?? {}),
  fsType: z.string().default('ext4'),
  attachmentType: z.enum(['unknown', 'detached', 'nfs', 'host']).default('detached'),
  nfs: NfsConfigSchema.nullish(),
  master: MasterSchema.nullish(),
  sizeBytes: z.number().nonnegative(),
  createdAt: z.string().default(''),
  updatedAt: z.string().default(''),
  version: z.string(),
  localPath: z.string().optional(),
});
export type ApiVolume = z.infer<typeof VolumeSchema>;

/** `Node`. */
export const NodeSchema = z.object({
  id: z.string(),
  name: z.string(),
  health: z.enum(['online', 'offline', 'unknown']).catch('unknown'),
  labels: labels.nullish().transform((v) => v ?? {}),
  createdAt: z.string().default(''),
  updatedAt: z.string().default(''),
  version: z.string(),
});
export type ApiNode = z.infer<typeof NodeSchema>;

/** `AuthUserData`: body of `POST /auth/login`. */
export const AuthUserDataSchema = z.object({ username: z.string().min(1), password: z.string().min(1) });

/** `CreateNamespaceData`: body of `POST /namespaces`. */
export const CreateNamespaceDataSchema = z.object({ name: z.string().min(1), labels: labels.optional() });

/** `CreateVolumeData`: body of `POST /namespaces/{namespaceID}/volumes`. */
export const CreateVolumeDataSchema = z.object({
  namespaceID: z.string().min(1),
  name: z.string().min(1),
  fsType: z.enum(['ext2', 'ext3', 'ext4', 'xfs', 'btrfs', 'block']).default('ext4'),
  description: z.string().optional(),
  sizeBytes: z.number().int().positive(),
  labels: labels.optional(),
});
export type CreateVolumeData = z.input<typeof CreateVolumeDataSchema>;

/** `NfsVolumeMountEndpoint`: body of `PUT …/volumes/{id}/nfs/mount-endpoint`. */
export const NfsVolumeMountEndpointSchema = z.object({ mountEndpoint: z.string(), version: z.string().optional() });

/** `UpdateNodeData`: body of `PUT /nodes/{id}`. */
export const UpdateNodeDataSchema = z.object({ labels: labels.optional(), version: z.string().optional() });

/** `SetComputeOnlyNodeData`: body of `PUT /nodes/{id}/compute-only`. */
export const SetComputeOnlyNodeDataSchema = z.object({ computeOnly: z.boolean().default(false), version: z.string().optional() });

/** `Error`: the body of every non-2xx response. */
export const ErrorBodySchema = z.object({ error: z.string() });
