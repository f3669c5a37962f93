/**
 * The bearer token EKS accepts from an IAM principal (aws-iam-authenticator `pkg/token`): a SigV4
 * *presigned* `sts:GetCallerIdentity` URL with the cluster name in the signed `x-k8s-aws-id` header,
 * encoded as `k8s-aws-v1.` + base64url without padding. The server honours it for 15 minutes after
 * `X-Amz-Date` whatever `X-Amz-Expires` says; we regenerate after {@link EKS_TOKEN_LIFETIME_MS}.
 */
import { Sha256 } from '@aws-crypto/sha256-js';
import { HttpRequest } from '@smithy/protocol-http';
import { SignatureV4 } from '@smithy/signature-v4';

/** The prefix of every EKS IAM token. */
export const EKS_TOKEN_PREFIX = 'k8s-aws-v1.';
/** How long we use one token (aws-iam-authenticator refreshes one minute before the 15-minute limit). */
export const EKS_TOKEN_LIFETIME_MS = 14 * 60 * 1000;
/** The header that binds a token to one cluster. */
export const CLUSTER_ID_HEADER = 'x-k8s-aws-id';

/** AWS credentials (the Lambda role's, including the session token). */
export interface AwsCredentials {
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken?: string;
}

export interface EksTokenOptions {
  /** The EKS cluster *name* (not the ARN). */
  clusterName: string;
  region: string;
  credentials: AwsCredentials | (() => Promise<AwsCredentials>);
  /** Signing time (default now). */
  signingDate?: Date;
}

export interface EksToken {
  token: string;
  /** Epoch ms after which a new token must be made. */
  expiresAt: number;
}

/** The regional STS host a token's URL points at. */
export function stsHost(region: string): string {
  return region.startsWith('cn-') ? `sts.${region}.amazonaws.com.cn` : `sts.${region}.amazonaws.com`;
}

/** Builds a token (no network call: presigning is local). */
export async function createEksToken(options: EksTokenOptions): Promise<EksToken> {
  const signingDate = options.signingDate ?? new Date();
  const hostname = stsHost(options.region);
  const signer = new SignatureV4({
    credentials: options.credentials,
    region: options.region,
    service: 'sts',
    sha256: Sha256,
    applyChecksum: false,
  });
  const request = new HttpRequest({
    method: 'GET',
    protocol: 'https:',
    hostname,
    path: '/',
    query: { Action: 'GetCallerIdentity', Version: '2011-06-15' },
    headers: { host: hostname, [CLUSTER_ID_HEADER]: options.clusterName },
  });
  const signed = await signer.presign(request, { expiresIn: 60, signingDate });
  const query = Object.entries(signed.query ?? {})
    .map(([name, value]) => `${encodeURIComponent(name)}=${encodeURIComponent(String(value))}`)
    .join('&');
  const url = `https://${hostname}/?${query}`;
  return {
    token: EKS_TOKEN_PREFIX + Buffer.from(url, 'utf8').toString('base64url'),
    expiresAt: signingDate.getTime() + EKS_TOKEN_LIFETIME_MS,
  };
}
