/**
 * One realistic, fully populated object of every kind the emulator serves, as the apiserver writes them in
 * JSON (canonical quantities, RFC 3339 times, MicroTime with microseconds, base64 bytes), for the protobuf
 * round trip. Pointers at their zero (`replicas: 0`, `immutable: false`), empty map values, IntOrString in
 * both forms and embedded (inline) structs are there on purpose.
 */
import type { KubeObject } from '../../../infra/local/kube-api/types.ts';

const T1 = '2026-01-02T03:04:05Z';
const T2 = '2026-01-02T03:05:00Z';
const MT = '2026-01-02T03:04:05.123456Z';

const meta = (name: string, namespace?: string, extra: Record<string, unknown> = {}): KubeObject['metadata'] => ({
  name,
  ...(namespace ? { namespace } : {}),
  uid: '6f1c2a4e-0b6e-4c56-9f43-1f0a7c2d9e11',
  resourceVersion: '4242',
  creationTimestamp: T1,
  labels: { 'app.kubernetes.io/name': 'demo', empty: '' },
  annotations: { 'example.com/note': 'multi\nline', 'kubectl.kubernetes.io/last-applied-configuration': '{"a":1}\n' },
  ...extra,
});

const ownerRef = { apiVersion: 'apps/v1', kind: 'ReplicaSet', name: 'web-5d4f8', uid: '0d2c3b4a-1111-2222-3333-444455556666', controller: true, blockOwnerDeletion: false };

const container = {
  name: 'web',
  image: 'registry.example.com/web:1.2.3',
  command: ['/bin/web'],
  args: ['--port=8080', ''],
  workingDir: '/srv',
  ports: [{ name: 'http', containerPort: 8080, protocol: 'TCP' }, { containerPort: 9090, hostPort: 19090, hostIP: '0.0.0.0', protocol: 'UDP' }],
  envFrom: [{ prefix: 'CFG_', configMapRef: { name: 'cfg', optional: true } }, { secretRef: { name: 'creds' } }],
  env: [
    { name: 'PLAIN', value: 'v' },
    { name: 'EMPTY' },
    { name: 'POD', valueFrom: { fieldRef: { apiVersion: 'v1', fieldPath: 'metadata.name' } } },
    { name: 'MEM', valueFrom: { resourceFieldRef: { containerName: 'web', resource: 'limits.memory', divisor: '1Mi' } } },
    { name: 'KEY', valueFrom: { secretKeyRef: { name: 'creds', key: 'password', optional: false } } },
    { name: 'CM', valueFrom: { configMapKeyRef: { name: 'cfg', key: 'mode' } } },
  ],
  resources: { limits: { cpu: '500m', memory: '384Mi' }, requests: { cpu: '50m', memory: '128Mi', 'example.com/gpu': '1' } },
  resizePolicy: [{ resourceName: 'cpu', restartPolicy: 'NotRequired' }],
  volumeMounts: [{ name: 'data', mountPath: '/data', readOnly: true, subPath: 'app', mountPropagation: 'None' }],
  volumeDevices: [{ name: 'raw', devicePath: '/dev/xvda' }],
  livenessProbe: { httpGet: { path: '/healthz', port: 'http', scheme: 'HTTP', httpHeaders: [{ name: 'X-Probe', value: '' }] }, periodSeconds: 10, failureThreshold: 3, timeoutSeconds: 1, successThreshold: 1 },
  readinessProbe: { tcpSocket: { port: 8080 }, initialDelaySeconds: 3, periodSeconds: 5 },
  startupProbe: { exec: { command: ['cat', '/tmp/ready'] }, terminationGracePeriodSeconds: 0 },
  lifecycle: { preStop: { sleep: { seconds: 5 } }, postStart: { httpGet: { path: '/started', port: 8080, host: 'localhost' } } },
  terminationMessagePath: '/dev/termination-log',
  terminationMessagePolicy: 'File',
  imagePullPolicy: 'IfNotPresent',
  securityContext: {
    capabilities: { add: ['NET_BIND_SERVICE'], drop: ['ALL'] },
    privileged: false,
    runAsUser: 1000,
    runAsGroup: 0,
    runAsNonRoot: true,
    readOnlyRootFilesystem: true,
    allowPrivilegeEscalation: false,
    seccompProfile: { type: 'RuntimeDefault' },
    seLinuxOptions: { level: 's0:c123,c456' },
  },
  stdin: true,
};

const podSpec = {
  volumes: [
    { name: 'data', persistentVolumeClaim: { claimName: 'data' } },
    { name: 'cfg', configMap: { name: 'cfg', items: [{ key: 'a', path: 'a.txt', mode: 420 }], defaultMode: 420, optional: false } },
    { name: 'creds', secret: { secretName: 'creds', defaultMode: 256 } },
    { name: 'scratch', emptyDir: { medium: 'Memory', sizeLimit: '64Mi' } },
    { name: 'host', hostPath: { path: '/var/lib/x', type: 'DirectoryOrCreate' } },
    {
      name: 'token',
      projected: {
        sources: [
          { serviceAccountToken: { audience: 'api', expirationSeconds: 3600, path: 'token' } },
          { downwardAPI: { items: [{ path: 'labels', fieldRef: { apiVersion: 'v1', fieldPath: 'metadata.labels' } }] } },
        ],
        defaultMode: 420,
      },
    },
    { name: 'csi', csi: { driver: 'csi.storageos.com', readOnly: true, fsType: 'ext4', volumeAttributes: { pool: 'default' }, nodePublishSecretRef: { name: 'csi' } } },
    {
      name: 'eph',
      ephemeral: {
        volumeClaimTemplate: {
          metadata: { labels: { type: 'eph' } },
          spec: { accessModes: ['ReadWriteOnce'], storageClassName: 'fast', resources: { requests: { storage: '1Gi' } } },
        },
      },
    },
  ],
  initContainers: [{ name: 'init', image: 'busybox:1.36', command: ['sh', '-c', 'true'], restartPolicy: 'Always' }],
  containers: [container],
  restartPolicy: 'Always',
  terminationGracePeriodSeconds: 30,
  activeDeadlineSeconds: 0,
  dnsPolicy: 'ClusterFirst',
  nodeSelector: { 'kubernetes.io/os': 'linux' },
  serviceAccountName: 'builder',
  serviceAccount: 'builder',
  automountServiceAccountToken: false,
  nodeName: 'node-1',
  hostNetwork: true,
  shareProcessNamespace: false,
  securityContext: { runAsUser: 1000, runAsGroup: 1000, fsGroup: 2000, runAsNonRoot: true, supplementalGroups: [4000, 0], sysctls: [{ name: 'net.core.somaxconn', value: '1024' }], seccompProfile: { type: 'RuntimeDefault' } },
  imagePullSecrets: [{ name: 'regcred' }],
  hostname: 'web-0',
  subdomain: 'web',
  affinity: {
    nodeAffinity: {
      requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: [{ matchExpressions: [{ key: 'zone', operator: 'In', values: ['a', 'b'] }] }] },
      preferredDuringSchedulingIgnoredDuringExecution: [{ weight: 1, preference: { matchFields: [{ key: 'metadata.name', operator: 'NotIn', values: ['bad'] }] } }],
    },
    podAntiAffinity: {
      preferredDuringSchedulingIgnoredDuringExecution: [{
        weight: 100,
        podAffinityTerm: { topologyKey: 'kubernetes.io/hostname', labelSelector: { matchLabels: { app: 'web' } }, namespaces: ['default'] },
      }],
    },
  },
  schedulerName: 'default-scheduler',
  tolerations: [{ key: 'node.kubernetes.io/not-ready', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 300 }, { operator: 'Exists' }],
  hostAliases: [{ ip: '10.0.0.1', hostnames: ['db.local'] }],
  priorityClassName: 'high',
  priority: 0,
  dnsConfig: { nameservers: ['1.1.1.1'], searches: ['svc.cluster.local'], options: [{ name: 'ndots', value: '2' }, { name: 'edns0' }] },
  readinessGates: [{ conditionType: 'example.com/ready' }],
  runtimeClassName: 'runc',
  enableServiceLinks: true,
  preemptionPolicy: 'PreemptLowerPriority',
  overhead: { cpu: '10m' },
  topologySpreadConstraints: [{ maxSkew: 1, topologyKey: 'zone', whenUnsatisfiable: 'DoNotSchedule', labelSelector: { matchExpressions: [{ key: 'app', operator: 'Exists' }] }, minDomains: 2 }],
  setHostnameAsFQDN: false,
  os: { name: 'linux' },
  schedulingGates: [{ name: 'example.com/gate' }],
};

const template = { metadata: { labels: { app: 'web' }, annotations: { 'prometheus.io/scrape': 'true' } }, spec: podSpec };

/** Every served kind (by `apiVersion/kind`) → a fixture. */
export const FIXTURES: KubeObject[] = [
  {
    apiVersion: 'v1', kind: 'ConfigMap', metadata: meta('cfg', 'default', { ownerReferences: [ownerRef], finalizers: ['example.com/keep'] }),
    data: { mode: 'fast', empty: '', 'multi.txt': 'a\nb\n' }, binaryData: { blob: Buffer.from([0, 1, 2, 255]).toString('base64') }, immutable: false,
  },
  {
    apiVersion: 'v1', kind: 'Secret', metadata: meta('creds', 'default'), type: 'kubernetes.io/basic-auth',
    data: { username: Buffer.from('admin').toString('base64'), password: Buffer.from('s3cr3t').toString('base64'), empty: '' }, immutable: true,
  },
  {
    apiVersion: 'v1', kind: 'Namespace',
    metadata: meta('team-a', undefined, { deletionTimestamp: T2, deletionGracePeriodSeconds: 0 }),
    spec: { finalizers: ['kubernetes'] },
    status: { phase: 'Terminating', conditions: [{ type: 'NamespaceContentRemaining', status: 'True', lastTransitionTime: T2, reason: 'SomeResourcesRemain', message: 'Some resources are remaining' }] },
  },
  {
    apiVersion: 'v1', kind: 'ServiceAccount', metadata: meta('builder', 'default'),
    secrets: [{ name: 'builder-token', namespace: 'default', kind: 'Secret', apiVersion: 'v1', uid: 'u-1', resourceVersion: '7' }],
    imagePullSecrets: [{ name: 'regcred' }], automountServiceAccountToken: false,
  },
  {
    apiVersion: 'v1', kind: 'Node', metadata: meta('node-1', undefined, { annotations: { 'csi.volume.kubernetes.io/nodeid': '{"csi.storageos.com":"8a1c"}' } }),
    spec: { podCIDR: '10.244.1.0/24', podCIDRs: ['10.244.1.0/24'], providerID: 'aws:///eu-west-1a/i-0abc', unschedulable: true, taints: [{ key: 'dedicated', value: 'storage', effect: 'NoSchedule', timeAdded: T1 }] },
    status: {
      capacity: { cpu: '4', memory: '16318948Ki', pods: '110', 'ephemeral-storage': '101430960Ki' },
      allocatable: { cpu: '3920m', memory: '15601124Ki', pods: '110' },
      phase: 'Running',
      conditions: [{ type: 'Ready', status: 'True', lastHeartbeatTime: T2, lastTransitionTime: T1, reason: 'KubeletReady', message: 'kubelet is posting ready status' }],
      addresses: [{ type: 'InternalIP', address: '10.0.1.12' }, { type: 'Hostname', address: 'node-1' }],
      daemonEndpoints: { kubeletEndpoint: { Port: 10250 } },
      nodeInfo: {
        machineID: 'm', systemUUID: 's', bootID: 'b', kernelVersion: '6.1.0', osImage: 'Debian GNU/Linux 12 (bookworm)', containerRuntimeVersion: 'containerd://1.7.0',
        kubeletVersion: 'v1.32.0', kubeProxyVersion: '', operatingSystem: 'linux', architecture: 'amd64',
      },
      images: [{ names: ['registry.example.com/web:1.2.3'], sizeBytes: 12345678 }],
      volumesInUse: ['kubernetes.io/csi/csi.storageos.com^vol-1'],
      volumesAttached: [{ name: 'kubernetes.io/csi/csi.storageos.com^vol-1', devicePath: '' }],
    },
  },
  {
    apiVersion: 'v1', kind: 'PersistentVolume',
    metadata: meta('pvc-1f2e', undefined, { finalizers: ['kubernetes.io/pv-protection'], annotations: { 'pv.kubernetes.io/provisioned-by': 'csi.storageos.com' } }),
    spec: {
      capacity: { storage: '5Gi' },
      csi: {
        driver: 'csi.storageos.com', volumeHandle: 'vol-1', readOnly: true, fsType: 'ext4', volumeAttributes: { 'csi.storage.k8s.io/pv/name': 'pvc-1f2e' },
        controllerPublishSecretRef: { name: 'csi-publish', namespace: 'kube-system' }, nodeStageSecretRef: { name: 'csi-stage', namespace: 'kube-system' },
      },
      accessModes: ['ReadWriteOnce', 'ReadWriteMany'],
      claimRef: { kind: 'PersistentVolumeClaim', namespace: 'default', name: 'data', uid: 'c-1', apiVersion: 'v1', resourceVersion: '100' },
      persistentVolumeReclaimPolicy: 'Delete',
      storageClassName: 'fast',
      mountOptions: ['noatime'],
      volumeMode: 'Filesystem',
      nodeAffinity: { required: { nodeSelectorTerms: [{ matchExpressions: [{ key: 'kubernetes.io/hostname', operator: 'In', values: ['node-1'] }] }] } },
    },
    status: { phase: 'Bound', message: 'bound by claimflow', reason: 'Provisioned', lastPhaseTransitionTime: T2 },
  },
  {
    apiVersion: 'v1', kind: 'PersistentVolume', metadata: meta('local-1'),
    spec: { capacity: { storage: '1500Mi' }, local: { path: '/mnt/disks/1', fsType: 'xfs' }, accessModes: ['ReadWriteOncePod'], persistentVolumeReclaimPolicy: 'Retain', volumeMode: 'Block' },
    status: { phase: 'Available' },
  },
  {
    apiVersion: 'v1', kind: 'PersistentVolumeClaim',
    metadata: meta('data', 'default', { finalizers: ['kubernetes.io/pvc-protection'], annotations: { 'volume.kubernetes.io/storage-provisioner': 'csi.storageos.com', 'pv.kubernetes.io/bind-completed': 'yes' } }),
    spec: {
      accessModes: ['ReadWriteOnce'],
      selector: { matchLabels: { tier: 'gold' }, matchExpressions: [{ key: 'zone', operator: 'NotIn', values: ['c'] }] },
      resources: { requests: { storage: '5Gi' }, limits: { storage: '10Gi' } },
      volumeName: 'pvc-1f2e', storageClassName: 'fast', volumeMode: 'Filesystem',
      dataSource: { apiGroup: 'snapshot.storage.k8s.io', kind: 'VolumeSnapshot', name: 'snap' },
      dataSourceRef: { apiGroup: 'snapshot.storage.k8s.io', kind: 'VolumeSnapshot', name: 'snap', namespace: 'default' },
    },
    status: {
      phase: 'Bound', accessModes: ['ReadWriteOnce'], capacity: { storage: '5Gi' },
      conditions: [{ type: 'Resizing', status: 'False', lastProbeTime: null, lastTransitionTime: T2 }],
      allocatedResources: { storage: '5Gi' },
    },
  },
  {
    apiVersion: 'v1', kind: 'Pod',
    metadata: meta('web-5d4f8-x2x7k', 'default', { generateName: 'web-5d4f8-', ownerReferences: [ownerRef], generation: 1 }),
    spec: podSpec,
    status: {
      phase: 'Running',
      conditions: [{ type: 'Ready', status: 'True', lastProbeTime: null, lastTransitionTime: T2 }],
      hostIP: '10.0.1.12', hostIPs: [{ ip: '10.0.1.12' }], podIP: '10.244.1.7', podIPs: [{ ip: '10.244.1.7' }], startTime: T1, qosClass: 'Burstable',
      containerStatuses: [{
        name: 'web', state: { running: { startedAt: T1 } }, lastState: { terminated: { exitCode: 137, signal: 9, reason: 'OOMKilled', startedAt: T1, finishedAt: T2, containerID: 'containerd://abc' } },
        ready: true, restartCount: 0, image: 'registry.example.com/web:1.2.3', imageID: 'registry.example.com/web@sha256:00', containerID: 'containerd://def', started: true,
      }],
      initContainerStatuses: [{ name: 'init', state: { waiting: { reason: 'PodInitializing' } }, lastState: {}, ready: false, restartCount: 2, image: 'busybox:1.36', imageID: '' }],
    },
  },
  {
    apiVersion: 'v1', kind: 'Service', metadata: meta('pvc-1f2e', 'default', { labels: { 'storageos.com/volume-id': 'vol-1' } }),
    spec: {
      ports: [
        { name: 'nfs', protocol: 'TCP', port: 2049, targetPort: 2049 },
        { name: 'metrics', protocol: 'TCP', appProtocol: 'http', port: 80, targetPort: 'http-metrics', nodePort: 30080 },
      ],
      selector: { app: 'web' },
      clusterIP: '10.96.0.17', clusterIPs: ['10.96.0.17'], type: 'NodePort', externalIPs: ['192.0.2.10'], sessionAffinity: 'ClientIP',
      sessionAffinityConfig: { clientIP: { timeoutSeconds: 10800 } },
      externalTrafficPolicy: 'Cluster', ipFamilies: ['IPv4'], ipFamilyPolicy: 'SingleStack', internalTrafficPolicy: 'Cluster', publishNotReadyAddresses: true,
    },
    status: { loadBalancer: { ingress: [{ ip: '192.0.2.1', ports: [{ port: 80, protocol: 'TCP' }] }] } },
  },
  {
    apiVersion: 'v1', kind: 'Endpoints', metadata: meta('pvc-1f2e', 'default'),
    subsets: [{
      addresses: [{ ip: '10.0.1.12', hostname: 'node-1', nodeName: 'node-1', targetRef: { kind: 'Pod', name: 'web', namespace: 'default', uid: 'p-1' } }],
      notReadyAddresses: [{ ip: '10.0.1.13' }],
      ports: [{ name: 'nfs', port: 2049, protocol: 'TCP' }, { name: 'metrics', port: 80, protocol: 'TCP', appProtocol: 'http' }],
    }],
  },
  {
    apiVersion: 'v1', kind: 'Event', metadata: meta('data.18a1b2c3d4e5f6a7', 'default'),
    involvedObject: { kind: 'PersistentVolumeClaim', namespace: 'default', name: 'data', uid: 'c-1', apiVersion: 'v1', resourceVersion: '100' },
    reason: 'ProvisioningSucceeded', message: 'Successfully provisioned volume pvc-1f2e', source: { component: 'claimflow-provisioner', host: 'lambda' },
    firstTimestamp: T1, lastTimestamp: T2, count: 3, type: 'Normal', eventTime: null, reportingComponent: 'claimflow-provisioner', reportingInstance: '',
  },
  {
    apiVersion: 'v1', kind: 'Event', metadata: meta('web.new', 'default'),
    involvedObject: { kind: 'Pod', namespace: 'default', name: 'web', fieldPath: 'spec.containers{web}' },
    reason: 'Started', message: 'Started container', source: {}, firstTimestamp: null, lastTimestamp: null, type: 'Normal',
    eventTime: MT, series: { count: 2, lastObservedTime: MT }, action: 'Start', related: { kind: 'Node', name: 'node-1' },
    reportingComponent: 'kubelet', reportingInstance: 'node-1',
  },
  {
    apiVersion: 'events.k8s.io/v1', kind: 'Event', metadata: meta('web.v1', 'default'),
    eventTime: MT, series: { count: 4, lastObservedTime: MT }, reportingController: 'example.com/ctrl', reportingInstance: 'ctrl-0', action: 'Reconcile',
    reason: 'Synced', regarding: { kind: 'Pod', namespace: 'default', name: 'web', uid: 'p-1' }, related: { kind: 'Node', name: 'node-1' }, note: 'synced', type: 'Warning',
    deprecatedSource: { component: 'ctrl' }, deprecatedFirstTimestamp: T1, deprecatedLastTimestamp: T2, deprecatedCount: 4,
  },
  {
    apiVersion: 'storage.k8s.io/v1', kind: 'StorageClass', metadata: meta('fast', undefined, { annotations: { 'storageclass.kubernetes.io/is-default-class': 'true' } }),
    provisioner: 'csi.storageos.com', parameters: { 'csi.storage.k8s.io/fstype': 'ext4', pool: '' }, reclaimPolicy: 'Retain', mountOptions: ['noatime'],
    allowVolumeExpansion: false, volumeBindingMode: 'WaitForFirstConsumer',
    allowedTopologies: [{ matchLabelExpressions: [{ key: 'topology.kubernetes.io/zone', values: ['eu-west-1a'] }] }],
  },
  {
    apiVersion: 'storage.k8s.io/v1', kind: 'VolumeAttachment', metadata: meta('csi-0a1b'),
    spec: { attacher: 'csi.storageos.com', source: { persistentVolumeName: 'pvc-1f2e' }, nodeName: 'node-1' },
    status: {
      attached: true, attachmentMetadata: { devicePath: '/dev/sdb' },
      attachError: { time: T1, message: 'timed out', errorCode: 4 }, detachError: { time: T2, message: 'busy' },
    },
  },
  {
    apiVersion: 'storage.k8s.io/v1', kind: 'VolumeAttachment', metadata: meta('csi-inline'),
    spec: {
      attacher: 'csi.storageos.com', nodeName: 'node-2',
      source: { inlineVolumeSpec: { csi: { driver: 'csi.storageos.com', volumeHandle: 'vol-2' }, accessModes: ['ReadWriteOnce'], capacity: { storage: '1Gi' } } },
    },
    status: { attached: false },
  },
  {
    apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', metadata: meta('claimflow-forwarder', 'claimflow'),
    spec: { holderIdentity: 'forwarder-0', leaseDurationSeconds: 15, acquireTime: MT, renewTime: '2026-01-02T03:04:06.000001Z', leaseTransitions: 0 },
  },
  {
    apiVersion: 'apps/v1', kind: 'Deployment', metadata: meta('web', 'default', { generation: 3 }),
    spec: {
      replicas: 0,
      selector: { matchLabels: { app: 'web' } },
      template,
      strategy: { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: 0, maxSurge: '25%' } },
      minReadySeconds: 5, revisionHistoryLimit: 3, paused: true, progressDeadlineSeconds: 600,
    },
    status: {
      observedGeneration: 3, replicas: 2, updatedReplicas: 2, readyReplicas: 1, availableReplicas: 1, unavailableReplicas: 1, collisionCount: 0,
      conditions: [{ type: 'Available', status: 'False', lastUpdateTime: T1, lastTransitionTime: T2, reason: 'MinimumReplicasUnavailable', message: 'Deployment does not have minimum availability.' }],
    },
  },
  {
    apiVersion: 'apps/v1', kind: 'ReplicaSet', metadata: meta('web-5d4f8', 'default', { generation: 1, ownerReferences: [{ ...ownerRef, kind: 'Deployment', name: 'web' }] }),
    spec: { replicas: 2, minReadySeconds: 10, selector: { matchLabels: { app: 'web', 'pod-template-hash': '5d4f8' } }, template },
    status: {
      replicas: 0, fullyLabeledReplicas: 2, readyReplicas: 1, availableReplicas: 1, observedGeneration: 1,
      conditions: [{ type: 'ReplicaFailure', status: 'True', lastTransitionTime: T1, reason: 'FailedCreate', message: 'quota' }],
    },
  },
  {
    apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'Role', metadata: meta('lease', 'claimflow'),
    rules: [
      { apiGroups: ['coordination.k8s.io'], resources: ['leases'], resourceNames: ['claimflow-forwarder'], verbs: ['get', 'update'] },
      { apiGroups: [''], resources: ['configmaps', 'secrets'], verbs: ['*'] },
    ],
  },
  {
    apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', metadata: meta('aggregate'),
    rules: [{ nonResourceURLs: ['/healthz', '/metrics'], verbs: ['get'] }],
    aggregationRule: { clusterRoleSelectors: [{ matchLabels: { 'rbac.example.com/aggregate': 'true' } }] },
  },
  {
    apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'RoleBinding', metadata: meta('lease', 'claimflow'),
    subjects: [{ kind: 'ServiceAccount', name: 'forwarder', namespace: 'claimflow' }, { kind: 'User', apiGroup: 'rbac.authorization.k8s.io', name: 'alice' }],
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'lease' },
  },
  {
    apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRoleBinding', metadata: meta('binder'),
    subjects: [{ kind: 'Group', apiGroup: 'rbac.authorization.k8s.io', name: 'claimflow-binder' }],
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'claimflow-binder' },
  },
];

/** Bodies that are not stored kinds but cross the wire: TokenRequest, Status, DeleteOptions. */
export const OTHER_MESSAGES: Array<Record<string, unknown>> = [
  {
    apiVersion: 'authentication.k8s.io/v1', kind: 'TokenRequest', metadata: { name: 'builder', namespace: 'default', creationTimestamp: null },
    spec: { audiences: ['https://kubernetes.default.svc.cluster.local', 'vault'], expirationSeconds: 3600, boundObjectRef: { kind: 'Secret', apiVersion: 'v1', name: 'creds', uid: 'u-2' } },
    status: { token: 'eyJ.x.y', expirationTimestamp: T2 },
  },
  {
    apiVersion: 'v1', kind: 'Status', metadata: {}, status: 'Failure', message: 'PersistentVolumeClaim "c1" is invalid: spec.accessModes: Required value',
    reason: 'Invalid', details: { name: 'c1', kind: 'PersistentVolumeClaim', causes: [{ reason: 'FieldValueRequired', message: 'Required value', field: 'spec.accessModes' }], retryAfterSeconds: 1 }, code: 422,
  },
  {
    apiVersion: 'v1', kind: 'DeleteOptions', gracePeriodSeconds: 0, preconditions: { uid: 'u-1', resourceVersion: '9' }, propagationPolicy: 'Foreground', dryRun: ['All'], orphanDependents: false,
  },
];
