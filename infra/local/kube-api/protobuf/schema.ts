/**
 * The protobuf messages of every kind the emulator serves, in a compact notation: one entry per message,
 * one `jsonName:fieldNumber:type[flag]` per field.
 *
 * The facts (JSON name, protobuf field number, Go type, pointer or value, `omitempty`) are those of the
 * struct tags in `k8s.io/api` (`core/v1`, `apps/v1`, `rbac/v1`, `authentication/v1`, `storage/v1`,
 * `coordination/v1`, `events/v1` `types.go`, commit 10b39a39b) and `k8s.io/apimachinery`
 * (`pkg/apis/meta/v1/types.go`, commit eed236ce), which are what `generated.proto` is generated from;
 * only the messages reachable from a served kind are listed.
 *
 * - type: `string`, `int32`, `int64`, `bool`, `double`, `bytes` (JSON: base64), a message name
 *   (`core.PodSpec`), or one of the types with their own JSON form: `Time` and `MicroTime` (`{seconds=1,
 *   nanos=2}`, JSON RFC 3339 / with microseconds), `Quantity` (`{string=1}`, JSON string), `IntOrString`
 *   (`{type=1, intVal=2, strVal=3}`, JSON number or string), `FieldsV1` (`{Raw=1}`, JSON object),
 *   `RawExtension` (`{raw=1}`, JSON object). `[]T` is `repeated T`; `{}T` is `map<string, T>`.
 * - jsonName `...`: an embedded struct (`json:""`): its fields are the parent's in JSON, one nested message
 *   on the wire.
 * - flag `?`: a Go pointer — a zero value on the wire is a value (`replicas: 0`, `immutable: false`).
 *   flag `!`: a Go value without `omitempty` — a zero on the wire is written out (`"reportingComponent": ""`).
 *   No flag: a Go value with `omitempty` — a zero on the wire is absent in JSON, as Go clients send every
 *   value field (`generateName: ""`, `generation: 0`).
 * - A message whose text starts with `=` is a named Go slice (`type AttestationValue []string`): a message
 *   with `repeated items = 1` on the wire, the bare array in JSON.
 */

/** Message name → fields. */
export const MESSAGES: Readonly<Record<string, string>> = {
  'apps.Deployment': 'metadata:1:meta.ObjectMeta spec:2:apps.DeploymentSpec status:3:apps.DeploymentStatus',
  'apps.DeploymentCondition':
    'type:1:string! status:2:string! reason:4:string message:5:string lastUpdateTime:6:Time ' +
    'lastTransitionTime:7:Time',
  'apps.DeploymentList': 'metadata:1:meta.ListMeta items:2:[]apps.Deployment',
  'apps.DeploymentSpec':
    'replicas:1:int32? selector:2:meta.LabelSelector template:3:core.PodTemplateSpec ' +
    'strategy:4:apps.DeploymentStrategy minReadySeconds:5:int32 revisionHistoryLimit:6:int32? paused:7:bool ' +
    'progressDeadlineSeconds:9:int32?',
  'apps.DeploymentStatus':
    'observedGeneration:1:int64 replicas:2:int32 updatedReplicas:3:int32 availableReplicas:4:int32 ' +
    'unavailableReplicas:5:int32 conditions:6:[]apps.DeploymentCondition readyReplicas:7:int32 ' +
    'collisionCount:8:int32? terminatingReplicas:9:int32?',
  'apps.DeploymentStrategy': 'type:1:string rollingUpdate:2:apps.RollingUpdateDeployment',
  'apps.ReplicaSet': 'metadata:1:meta.ObjectMeta spec:2:apps.ReplicaSetSpec status:3:apps.ReplicaSetStatus',
  'apps.ReplicaSetCondition': 'type:1:string! status:2:string! lastTransitionTime:3:Time reason:4:string message:5:string',
  'apps.ReplicaSetList': 'metadata:1:meta.ListMeta items:2:[]apps.ReplicaSet',
  'apps.ReplicaSetSpec': 'replicas:1:int32? selector:2:meta.LabelSelector template:3:core.PodTemplateSpec minReadySeconds:4:int32',
  'apps.ReplicaSetStatus':
    'replicas:1:int32! fullyLabeledReplicas:2:int32 observedGeneration:3:int64 readyReplicas:4:int32 ' +
    'availableReplicas:5:int32 conditions:6:[]apps.ReplicaSetCondition terminatingReplicas:7:int32?',
  'apps.RollingUpdateDeployment': 'maxUnavailable:1:IntOrString? maxSurge:2:IntOrString?',

  'authn.BoundObjectReference': 'kind:1:string apiVersion:2:string name:3:string uid:4:string',
  'authn.TokenRequest': 'metadata:1:meta.ObjectMeta spec:2:authn.TokenRequestSpec status:3:authn.TokenRequestStatus',
  'authn.TokenRequestSpec':
    'audiences:1:[]string boundObjectRef:3:authn.BoundObjectReference expirationSeconds:4:int64? ' +
    'attestations:5:{}authn.AttestationValue',
  'authn.TokenRequestStatus': 'token:1:string! expirationTimestamp:2:Time',
  'authn.SelfSubjectReview': 'metadata:1:meta.ObjectMeta status:2:authn.SelfSubjectReviewStatus',
  'authn.SelfSubjectReviewStatus': 'userInfo:1:authn.UserInfo',
  'authn.TokenReview': 'metadata:1:meta.ObjectMeta spec:2:authn.TokenReviewSpec status:3:authn.TokenReviewStatus',
  'authn.TokenReviewSpec': 'token:1:string audiences:2:[]string',
  'authn.TokenReviewStatus': 'authenticated:1:bool user:2:authn.UserInfo error:3:string audiences:4:[]string',
  'authn.UserInfo': 'username:1:string uid:2:string groups:3:[]string extra:4:{}authn.ExtraValue',
  'authn.ExtraValue': '=items:1:[]string',

  // authorization.k8s.io/v1 (`k8s.io/api/authorization/v1`): the access and rules reviews.
  'authz.ExtraValue': '=items:1:[]string',
  'authz.FieldSelectorAttributes': 'rawSelector:1:string requirements:2:[]authz.FieldSelectorRequirement',
  'authz.FieldSelectorRequirement': 'key:1:string! operator:2:string! values:3:[]string',
  'authz.LabelSelectorAttributes': 'rawSelector:1:string requirements:2:[]meta.LabelSelectorRequirement',
  'authz.LocalSubjectAccessReview': 'metadata:1:meta.ObjectMeta spec:2:authz.SubjectAccessReviewSpec status:3:authz.SubjectAccessReviewStatus',
  'authz.NonResourceAttributes': 'path:1:string verb:2:string',
  'authz.NonResourceRule': 'verbs:1:[]string! nonResourceURLs:2:[]string',
  'authz.ResourceAttributes':
    'namespace:1:string verb:2:string group:3:string version:4:string resource:5:string subresource:6:string ' +
    'name:7:string fieldSelector:8:authz.FieldSelectorAttributes? labelSelector:9:authz.LabelSelectorAttributes?',
  'authz.ResourceRule': 'verbs:1:[]string! apiGroups:2:[]string resources:3:[]string resourceNames:4:[]string',
  'authz.SelfSubjectAccessReview': 'metadata:1:meta.ObjectMeta spec:2:authz.SelfSubjectAccessReviewSpec status:3:authz.SubjectAccessReviewStatus',
  'authz.SelfSubjectAccessReviewSpec': 'resourceAttributes:1:authz.ResourceAttributes? nonResourceAttributes:2:authz.NonResourceAttributes?',
  'authz.SelfSubjectRulesReview': 'metadata:1:meta.ObjectMeta spec:2:authz.SelfSubjectRulesReviewSpec status:3:authz.SubjectRulesReviewStatus',
  'authz.SelfSubjectRulesReviewSpec': 'namespace:1:string',
  'authz.SubjectAccessReview': 'metadata:1:meta.ObjectMeta spec:2:authz.SubjectAccessReviewSpec status:3:authz.SubjectAccessReviewStatus',
  'authz.SubjectAccessReviewSpec':
    'resourceAttributes:1:authz.ResourceAttributes? nonResourceAttributes:2:authz.NonResourceAttributes? ' +
    'user:3:string groups:4:[]string extra:5:{}authz.ExtraValue uid:6:string',
  'authz.SubjectAccessReviewStatus': 'allowed:1:bool! denied:4:bool reason:2:string evaluationError:3:string',
  'authz.SubjectRulesReviewStatus':
    'resourceRules:1:[]authz.ResourceRule! nonResourceRules:2:[]authz.NonResourceRule! incomplete:3:bool! ' +
    'evaluationError:4:string',

  'coord.Lease': 'metadata:1:meta.ObjectMeta spec:2:coord.LeaseSpec',
  'coord.LeaseList': 'metadata:1:meta.ListMeta items:2:[]coord.Lease',
  'coord.LeaseSpec':
    'holderIdentity:1:string? leaseDurationSeconds:2:int32? acquireTime:3:MicroTime? renewTime:4:MicroTime? ' +
    'leaseTransitions:5:int32? strategy:6:string? preferredHolder:7:string?',

  'core.AWSElasticBlockStoreVolumeSource': 'volumeID:1:string! fsType:2:string partition:3:int32 readOnly:4:bool',
  'core.Affinity': 'nodeAffinity:1:core.NodeAffinity podAffinity:2:core.PodAffinity podAntiAffinity:3:core.PodAntiAffinity',
  'core.AppArmorProfile': 'type:1:string! localhostProfile:2:string?',
  'core.AttachedVolume': 'name:1:string! devicePath:2:string!',
  'core.AzureDiskVolumeSource':
    'diskName:1:string! diskURI:2:string! cachingMode:3:string? fsType:4:string? readOnly:5:bool? ' +
    'kind:6:string?',
  'core.AzureFilePersistentVolumeSource': 'secretName:1:string! shareName:2:string! readOnly:3:bool secretNamespace:4:string?',
  'core.AzureFileVolumeSource': 'secretName:1:string! shareName:2:string! readOnly:3:bool',
  'core.CSIPersistentVolumeSource':
    'driver:1:string! volumeHandle:2:string! readOnly:3:bool fsType:4:string volumeAttributes:5:{}string ' +
    'controllerPublishSecretRef:6:core.SecretReference nodeStageSecretRef:7:core.SecretReference ' +
    'nodePublishSecretRef:8:core.SecretReference controllerExpandSecretRef:9:core.SecretReference ' +
    'nodeExpandSecretRef:10:core.SecretReference',
  'core.CSIVolumeSource':
    'driver:1:string! readOnly:2:bool? fsType:3:string? volumeAttributes:4:{}string ' +
    'nodePublishSecretRef:5:core.LocalObjectReference',
  'core.Capabilities': 'add:1:[]string drop:2:[]string',
  'core.CephFSPersistentVolumeSource':
    'monitors:1:[]string path:2:string user:3:string secretFile:4:string secretRef:5:core.SecretReference ' +
    'readOnly:6:bool',
  'core.CephFSVolumeSource':
    'monitors:1:[]string path:2:string user:3:string secretFile:4:string ' +
    'secretRef:5:core.LocalObjectReference readOnly:6:bool',
  'core.CinderPersistentVolumeSource': 'volumeID:1:string! fsType:2:string readOnly:3:bool secretRef:4:core.SecretReference',
  'core.CinderVolumeSource': 'volumeID:1:string! fsType:2:string readOnly:3:bool secretRef:4:core.LocalObjectReference',
  'core.ClientIPConfig': 'timeoutSeconds:1:int32?',
  'core.ClusterTrustBundleProjection':
    'name:1:string? signerName:2:string? labelSelector:3:meta.LabelSelector path:4:string! optional:5:bool? ' +
    'user:6:int64?',
  'core.ConfigMap': 'metadata:1:meta.ObjectMeta data:2:{}string binaryData:3:{}bytes immutable:4:bool?',
  'core.ConfigMapEnvSource': '...:1:core.LocalObjectReference optional:2:bool?',
  'core.ConfigMapKeySelector': '...:1:core.LocalObjectReference key:2:string! optional:3:bool?',
  'core.ConfigMapList': 'metadata:1:meta.ListMeta items:2:[]core.ConfigMap',
  'core.ConfigMapNodeConfigSource': 'namespace:1:string! name:2:string! uid:3:string resourceVersion:4:string kubeletConfigKey:5:string!',
  'core.ConfigMapProjection': '...:1:core.LocalObjectReference items:2:[]core.KeyToPath optional:4:bool?',
  'core.ConfigMapVolumeSource':
    '...:1:core.LocalObjectReference items:2:[]core.KeyToPath defaultMode:3:int32? optional:4:bool? ' +
    'defaultUser:5:int64?',
  'core.Container':
    'name:1:string! image:2:string command:3:[]string args:4:[]string workingDir:5:string ' +
    'ports:6:[]core.ContainerPort env:7:[]core.EnvVar resources:8:core.ResourceRequirements ' +
    'volumeMounts:9:[]core.VolumeMount livenessProbe:10:core.Probe readinessProbe:11:core.Probe ' +
    'lifecycle:12:core.Lifecycle terminationMessagePath:13:string imagePullPolicy:14:string ' +
    'securityContext:15:core.SecurityContext stdin:16:bool stdinOnce:17:bool tty:18:bool ' +
    'envFrom:19:[]core.EnvFromSource terminationMessagePolicy:20:string volumeDevices:21:[]core.VolumeDevice ' +
    'startupProbe:22:core.Probe resizePolicy:23:[]core.ContainerResizePolicy restartPolicy:24:string? ' +
    'restartPolicyRules:25:[]core.ContainerRestartRule',
  'core.ContainerExtendedResourceRequest': 'containerName:1:string! resourceName:2:string! requestName:3:string!',
  'core.ContainerImage': 'names:1:[]string sizeBytes:2:int64',
  'core.ContainerPort': 'name:1:string hostPort:2:int32 containerPort:3:int32! protocol:4:string hostIP:5:string',
  'core.ContainerResizePolicy': 'resourceName:1:string! restartPolicy:2:string!',
  'core.ContainerRestartRule': 'action:1:string exitCodes:2:core.ContainerRestartRuleOnExitCodes',
  'core.ContainerRestartRuleOnExitCodes': 'operator:1:string values:2:[]int32',
  'core.ContainerState':
    'waiting:1:core.ContainerStateWaiting running:2:core.ContainerStateRunning ' +
    'terminated:3:core.ContainerStateTerminated',
  'core.ContainerStateRunning': 'startedAt:1:Time',
  'core.ContainerStateTerminated':
    'exitCode:1:int32! signal:2:int32 reason:3:string message:4:string startedAt:5:Time finishedAt:6:Time ' +
    'containerID:7:string',
  'core.ContainerStateWaiting': 'reason:1:string message:2:string',
  'core.ContainerStatus':
    'name:1:string! state:2:core.ContainerState lastState:3:core.ContainerState ready:4:bool! ' +
    'restartCount:5:int32! image:6:string! imageID:7:string! containerID:8:string started:9:bool? ' +
    'allocatedResources:10:{}Quantity resources:11:core.ResourceRequirements ' +
    'volumeMounts:12:[]core.VolumeMountStatus user:13:core.ContainerUser ' +
    'allocatedResourcesStatus:14:[]core.ResourceStatus stopSignal:15:string?',
  'core.ContainerUser': 'linux:1:core.LinuxContainerUser',
  'core.DaemonEndpoint': 'Port:1:int32!',
  'core.DownwardAPIProjection': 'items:1:[]core.DownwardAPIVolumeFile',
  'core.DownwardAPIVolumeFile':
    'path:1:string! fieldRef:2:core.ObjectFieldSelector resourceFieldRef:3:core.ResourceFieldSelector ' +
    'mode:4:int32? user:5:int64?',
  'core.DownwardAPIVolumeSource': 'items:1:[]core.DownwardAPIVolumeFile defaultMode:2:int32? defaultUser:3:int64?',
  'core.EmptyDirVolumeSource': 'medium:1:string sizeLimit:2:Quantity? mode:3:int32?',
  'core.EndpointAddress': 'ip:1:string! targetRef:2:core.ObjectReference hostname:3:string nodeName:4:string?',
  'core.EndpointPort': 'name:1:string port:2:int32! protocol:3:string appProtocol:4:string?',
  'core.EndpointSubset':
    'addresses:1:[]core.EndpointAddress notReadyAddresses:2:[]core.EndpointAddress ' +
    'ports:3:[]core.EndpointPort',
  'core.Endpoints': 'metadata:1:meta.ObjectMeta subsets:2:[]core.EndpointSubset',
  'core.EndpointsList': 'metadata:1:meta.ListMeta items:2:[]core.Endpoints',
  'core.EnvFromSource': 'prefix:1:string configMapRef:2:core.ConfigMapEnvSource secretRef:3:core.SecretEnvSource',
  'core.EnvVar': 'name:1:string! value:2:string valueFrom:3:core.EnvVarSource',
  'core.EnvVarSource':
    'fieldRef:1:core.ObjectFieldSelector resourceFieldRef:2:core.ResourceFieldSelector ' +
    'configMapKeyRef:3:core.ConfigMapKeySelector secretKeyRef:4:core.SecretKeySelector ' +
    'fileKeyRef:5:core.FileKeySelector',
  'core.EphemeralContainer': '...:1:core.EphemeralContainerCommon targetContainerName:2:string',
  'core.EphemeralContainerCommon':
    'name:1:string! image:2:string command:3:[]string args:4:[]string workingDir:5:string ' +
    'ports:6:[]core.ContainerPort env:7:[]core.EnvVar resources:8:core.ResourceRequirements ' +
    'volumeMounts:9:[]core.VolumeMount livenessProbe:10:core.Probe readinessProbe:11:core.Probe ' +
    'lifecycle:12:core.Lifecycle terminationMessagePath:13:string imagePullPolicy:14:string ' +
    'securityContext:15:core.SecurityContext stdin:16:bool stdinOnce:17:bool tty:18:bool ' +
    'envFrom:19:[]core.EnvFromSource terminationMessagePolicy:20:string volumeDevices:21:[]core.VolumeDevice ' +
    'startupProbe:22:core.Probe resizePolicy:23:[]core.ContainerResizePolicy restartPolicy:24:string? ' +
    'restartPolicyRules:25:[]core.ContainerRestartRule',
  'core.EphemeralVolumeSource': 'volumeClaimTemplate:1:core.PersistentVolumeClaimTemplate',
  'core.Event':
    'metadata:1:meta.ObjectMeta involvedObject:2:core.ObjectReference reason:3:string message:4:string ' +
    'source:5:core.EventSource firstTimestamp:6:Time lastTimestamp:7:Time count:8:int32 type:9:string ' +
    'eventTime:10:MicroTime series:11:core.EventSeries action:12:string related:13:core.ObjectReference ' +
    'reportingComponent:14:string! reportingInstance:15:string!',
  'core.EventList': 'metadata:1:meta.ListMeta items:2:[]core.Event',
  'core.EventSeries': 'count:1:int32 lastObservedTime:2:MicroTime',
  'core.EventSource': 'component:1:string host:2:string',
  'core.EvictionResponder': 'name:1:string! priority:2:int32?',
  'core.ExecAction': 'command:1:[]string',
  'core.FCVolumeSource': 'targetWWNs:1:[]string lun:2:int32? fsType:3:string readOnly:4:bool wwids:5:[]string',
  'core.FileKeySelector': 'volumeName:1:string! path:2:string! key:3:string! optional:4:bool?',
  'core.FlexPersistentVolumeSource': 'driver:1:string! fsType:2:string secretRef:3:core.SecretReference readOnly:4:bool options:5:{}string',
  'core.FlexVolumeSource':
    'driver:1:string! fsType:2:string secretRef:3:core.LocalObjectReference readOnly:4:bool ' +
    'options:5:{}string',
  'core.FlockerVolumeSource': 'datasetName:1:string datasetUUID:2:string',
  'core.GCEPersistentDiskVolumeSource': 'pdName:1:string! fsType:2:string partition:3:int32 readOnly:4:bool',
  'core.GRPCAction': 'port:1:int32! service:2:string? mode:3:string?',
  'core.GitRepoVolumeSource': 'repository:1:string! revision:2:string directory:3:string',
  'core.GlusterfsPersistentVolumeSource': 'endpoints:1:string! path:2:string! readOnly:3:bool endpointsNamespace:4:string?',
  'core.GlusterfsVolumeSource': 'endpoints:1:string! path:2:string! readOnly:3:bool',
  'core.HTTPGetAction':
    'path:1:string port:2:IntOrString host:3:string scheme:4:string httpHeaders:5:[]core.HTTPHeader ' +
    'protocol:6:string?',
  'core.HTTPHeader': 'name:1:string! value:2:string!',
  'core.HostAlias': 'ip:1:string! hostnames:2:[]string',
  'core.HostIP': 'ip:1:string!',
  'core.HostPathVolumeSource': 'path:1:string! type:2:string?',
  'core.ISCSIPersistentVolumeSource':
    'targetPortal:1:string! iqn:2:string! lun:3:int32! iscsiInterface:4:string fsType:5:string ' +
    'readOnly:6:bool portals:7:[]string chapAuthDiscovery:8:bool secretRef:10:core.SecretReference ' +
    'chapAuthSession:11:bool initiatorName:12:string?',
  'core.ISCSIVolumeSource':
    'targetPortal:1:string! iqn:2:string! lun:3:int32! iscsiInterface:4:string fsType:5:string ' +
    'readOnly:6:bool portals:7:[]string chapAuthDiscovery:8:bool secretRef:10:core.LocalObjectReference ' +
    'chapAuthSession:11:bool initiatorName:12:string?',
  'core.ImageVolumeSource': 'reference:1:string pullPolicy:2:string',
  'core.ImageVolumeStatus': 'imageRef:1:string',
  'core.KeyToPath': 'key:1:string! path:2:string! mode:3:int32? user:4:int64?',
  'core.Lifecycle': 'postStart:1:core.LifecycleHandler preStop:2:core.LifecycleHandler stopSignal:3:string?',
  'core.LifecycleHandler':
    'exec:1:core.ExecAction httpGet:2:core.HTTPGetAction tcpSocket:3:core.TCPSocketAction ' +
    'sleep:4:core.SleepAction',
  'core.LinuxContainerUser': 'uid:1:int64! gid:2:int64! supplementalGroups:3:[]int64',
  'core.LoadBalancerIngress': 'ip:1:string hostname:2:string ipMode:3:string? ports:4:[]core.PortStatus',
  'core.LoadBalancerStatus': 'ingress:1:[]core.LoadBalancerIngress',
  'core.LocalObjectReference': 'name:1:string',
  'core.LocalVolumeSource': 'path:1:string! fsType:2:string?',
  'core.ModifyVolumeStatus': 'targetVolumeAttributesClassName:1:string status:2:string!',
  'core.NFSVolumeSource': 'server:1:string! path:2:string! readOnly:3:bool',
  'core.Namespace': 'metadata:1:meta.ObjectMeta spec:2:core.NamespaceSpec status:3:core.NamespaceStatus',
  'core.NamespaceCondition': 'type:1:string! status:2:string! lastTransitionTime:4:Time reason:5:string message:6:string',
  'core.NamespaceList': 'metadata:1:meta.ListMeta items:2:[]core.Namespace',
  'core.NamespaceSpec': 'finalizers:1:[]string',
  'core.NamespaceStatus': 'phase:1:string conditions:2:[]core.NamespaceCondition',
  'core.Node': 'metadata:1:meta.ObjectMeta spec:2:core.NodeSpec status:3:core.NodeStatus',
  'core.NodeAddress': 'type:1:string! address:2:string!',
  'core.NodeAffinity':
    'requiredDuringSchedulingIgnoredDuringExecution:1:core.NodeSelector ' +
    'preferredDuringSchedulingIgnoredDuringExecution:2:[]core.PreferredSchedulingTerm',
  'core.NodeAllocatableMappedResources': 'name:1:string! quantity:2:Quantity?',
  'core.NodeAllocatableOverheadResources': 'name:1:string! perPod:2:Quantity? perContainer:3:Quantity?',
  'core.NodeAllocatableResourceClaimStatus':
    'resourceClaimName:1:string! containers:2:[]string mapping:4:[]core.NodeAllocatableMappedResources ' +
    'overhead:5:[]core.NodeAllocatableOverheadResources',
  'core.NodeCondition':
    'type:1:string! status:2:string! lastHeartbeatTime:3:Time lastTransitionTime:4:Time reason:5:string ' +
    'message:6:string',
  'core.NodeConfigSource': 'configMap:2:core.ConfigMapNodeConfigSource',
  'core.NodeConfigStatus':
    'assigned:1:core.NodeConfigSource active:2:core.NodeConfigSource lastKnownGood:3:core.NodeConfigSource ' +
    'error:4:string',
  'core.NodeDaemonEndpoints': 'kubeletEndpoint:1:core.DaemonEndpoint',
  'core.NodeFeatures': 'supplementalGroupsPolicy:1:bool?',
  'core.NodeList': 'metadata:1:meta.ListMeta items:2:[]core.Node',
  'core.NodePodPreemptionPolicy': 'disableResizePreemption:1:[]string',
  'core.NodeRuntimeHandler': 'name:1:string! features:2:core.NodeRuntimeHandlerFeatures',
  'core.NodeRuntimeHandlerFeatures': 'recursiveReadOnlyMounts:1:bool? userNamespaces:2:bool?',
  'core.NodeSelector': 'nodeSelectorTerms:1:[]core.NodeSelectorTerm',
  'core.NodeSelectorRequirement': 'key:1:string! operator:2:string! values:3:[]string',
  'core.NodeSelectorTerm': 'matchExpressions:1:[]core.NodeSelectorRequirement matchFields:2:[]core.NodeSelectorRequirement',
  'core.NodeSpec':
    'podCIDR:1:string externalID:2:string providerID:3:string unschedulable:4:bool taints:5:[]core.Taint ' +
    'configSource:6:core.NodeConfigSource podCIDRs:7:[]string ' +
    'podPreemptionPolicy:8:core.NodePodPreemptionPolicy',
  'core.NodeStatus':
    'capacity:1:{}Quantity allocatable:2:{}Quantity phase:3:string conditions:4:[]core.NodeCondition ' +
    'addresses:5:[]core.NodeAddress daemonEndpoints:6:core.NodeDaemonEndpoints nodeInfo:7:core.NodeSystemInfo ' +
    'images:8:[]core.ContainerImage volumesInUse:9:[]string volumesAttached:10:[]core.AttachedVolume ' +
    'config:11:core.NodeConfigStatus runtimeHandlers:12:[]core.NodeRuntimeHandler ' +
    'features:13:core.NodeFeatures declaredFeatures:14:[]string',
  'core.NodeSwapStatus': 'capacity:1:int64?',
  'core.NodeSystemInfo':
    'machineID:1:string! systemUUID:2:string! bootID:3:string! kernelVersion:4:string! osImage:5:string! ' +
    'containerRuntimeVersion:6:string! kubeletVersion:7:string! kubeProxyVersion:8:string! ' +
    'operatingSystem:9:string! architecture:10:string! swap:11:core.NodeSwapStatus',
  'core.ObjectFieldSelector': 'apiVersion:1:string fieldPath:2:string!',
  'core.ObjectReference':
    'kind:1:string namespace:2:string name:3:string uid:4:string apiVersion:5:string resourceVersion:6:string ' +
    'fieldPath:7:string',
  'core.PersistentVolume': 'metadata:1:meta.ObjectMeta spec:2:core.PersistentVolumeSpec status:3:core.PersistentVolumeStatus',
  'core.PersistentVolumeClaim':
    'metadata:1:meta.ObjectMeta spec:2:core.PersistentVolumeClaimSpec ' +
    'status:3:core.PersistentVolumeClaimStatus',
  'core.PersistentVolumeClaimCondition':
    'type:1:string! status:2:string! lastProbeTime:3:Time lastTransitionTime:4:Time reason:5:string ' +
    'message:6:string',
  'core.PersistentVolumeClaimList': 'metadata:1:meta.ListMeta items:2:[]core.PersistentVolumeClaim',
  'core.PersistentVolumeClaimSpec':
    'accessModes:1:[]string resources:2:core.VolumeResourceRequirements volumeName:3:string ' +
    'selector:4:meta.LabelSelector storageClassName:5:string? volumeMode:6:string? ' +
    'dataSource:7:core.TypedLocalObjectReference dataSourceRef:8:core.TypedObjectReference ' +
    'volumeAttributesClassName:9:string?',
  'core.PersistentVolumeClaimStatus':
    'phase:1:string accessModes:2:[]string capacity:3:{}Quantity ' +
    'conditions:4:[]core.PersistentVolumeClaimCondition allocatedResources:5:{}Quantity ' +
    'allocatedResourceStatuses:7:{}string currentVolumeAttributesClassName:8:string? ' +
    'modifyVolumeStatus:9:core.ModifyVolumeStatus healthStatus:10:core.VolumeHealthStatus',
  'core.PersistentVolumeClaimTemplate': 'metadata:1:meta.ObjectMeta spec:2:core.PersistentVolumeClaimSpec',
  'core.PersistentVolumeClaimVolumeSource': 'claimName:1:string! readOnly:2:bool',
  'core.PersistentVolumeList': 'metadata:1:meta.ListMeta items:2:[]core.PersistentVolume',
  'core.PersistentVolumeSource':
    'gcePersistentDisk:1:core.GCEPersistentDiskVolumeSource ' +
    'awsElasticBlockStore:2:core.AWSElasticBlockStoreVolumeSource hostPath:3:core.HostPathVolumeSource ' +
    'glusterfs:4:core.GlusterfsPersistentVolumeSource nfs:5:core.NFSVolumeSource ' +
    'rbd:6:core.RBDPersistentVolumeSource iscsi:7:core.ISCSIPersistentVolumeSource ' +
    'cinder:8:core.CinderPersistentVolumeSource cephfs:9:core.CephFSPersistentVolumeSource ' +
    'fc:10:core.FCVolumeSource flocker:11:core.FlockerVolumeSource ' +
    'flexVolume:12:core.FlexPersistentVolumeSource azureFile:13:core.AzureFilePersistentVolumeSource ' +
    'vsphereVolume:14:core.VsphereVirtualDiskVolumeSource quobyte:15:core.QuobyteVolumeSource ' +
    'azureDisk:16:core.AzureDiskVolumeSource photonPersistentDisk:17:core.PhotonPersistentDiskVolumeSource ' +
    'portworxVolume:18:core.PortworxVolumeSource scaleIO:19:core.ScaleIOPersistentVolumeSource ' +
    'local:20:core.LocalVolumeSource storageos:21:core.StorageOSPersistentVolumeSource ' +
    'csi:22:core.CSIPersistentVolumeSource',
  'core.PersistentVolumeSpec':
    'capacity:1:{}Quantity ...:2:core.PersistentVolumeSource accessModes:3:[]string ' +
    'claimRef:4:core.ObjectReference persistentVolumeReclaimPolicy:5:string storageClassName:6:string ' +
    'mountOptions:7:[]string volumeMode:8:string? nodeAffinity:9:core.VolumeNodeAffinity ' +
    'volumeAttributesClassName:10:string?',
  'core.PersistentVolumeStatus': 'phase:1:string message:2:string reason:3:string lastPhaseTransitionTime:4:Time?',
  'core.PhotonPersistentDiskVolumeSource': 'pdID:1:string! fsType:2:string',
  'core.Pod': 'metadata:1:meta.ObjectMeta spec:2:core.PodSpec status:3:core.PodStatus',
  'core.PodAffinity':
    'requiredDuringSchedulingIgnoredDuringExecution:1:[]core.PodAffinityTerm ' +
    'preferredDuringSchedulingIgnoredDuringExecution:2:[]core.WeightedPodAffinityTerm',
  'core.PodAffinityTerm':
    'labelSelector:1:meta.LabelSelector namespaces:2:[]string topologyKey:3:string! ' +
    'namespaceSelector:4:meta.LabelSelector matchLabelKeys:5:[]string mismatchLabelKeys:6:[]string',
  'core.PodAntiAffinity':
    'requiredDuringSchedulingIgnoredDuringExecution:1:[]core.PodAffinityTerm ' +
    'preferredDuringSchedulingIgnoredDuringExecution:2:[]core.WeightedPodAffinityTerm',
  'core.PodCertificateProjection':
    'signerName:1:string keyType:2:string maxExpirationSeconds:3:int32? credentialBundlePath:4:string ' +
    'keyPath:5:string certificateChainPath:6:string userAnnotations:7:{}string user:8:int64?',
  'core.PodCondition':
    'type:1:string! status:2:string! lastProbeTime:3:Time lastTransitionTime:4:Time reason:5:string ' +
    'message:6:string observedGeneration:7:int64',
  'core.PodDNSConfig': 'nameservers:1:[]string searches:2:[]string options:3:[]core.PodDNSConfigOption',
  'core.PodDNSConfigOption': 'name:1:string value:2:string?',
  'core.PodExtendedResourceClaimStatus': 'requestMappings:1:[]core.ContainerExtendedResourceRequest resourceClaimName:2:string!',
  'core.PodIP': 'ip:1:string!',
  'core.PodList': 'metadata:1:meta.ListMeta items:2:[]core.Pod',
  'core.PodOS': 'name:1:string!',
  'core.PodReadinessGate': 'conditionType:1:string!',
  'core.PodResourceClaim': 'name:1:string! resourceClaimName:3:string? resourceClaimTemplateName:4:string?',
  'core.PodResourceClaimStatus': 'name:1:string! resourceClaimName:2:string?',
  'core.PodSchedulingGate': 'name:1:string!',
  'core.PodSchedulingGroup': 'podGroupName:1:string?',
  'core.PodSecurityContext':
    'seLinuxOptions:1:core.SELinuxOptions runAsUser:2:int64? runAsNonRoot:3:bool? ' +
    'supplementalGroups:4:[]int64 fsGroup:5:int64? runAsGroup:6:int64? sysctls:7:[]core.Sysctl ' +
    'windowsOptions:8:core.WindowsSecurityContextOptions fsGroupChangePolicy:9:string? ' +
    'seccompProfile:10:core.SeccompProfile appArmorProfile:11:core.AppArmorProfile ' +
    'supplementalGroupsPolicy:12:string? seLinuxChangePolicy:13:string?',
  'core.PodSpec':
    'volumes:1:[]core.Volume containers:2:[]core.Container restartPolicy:3:string ' +
    'terminationGracePeriodSeconds:4:int64? activeDeadlineSeconds:5:int64? dnsPolicy:6:string ' +
    'nodeSelector:7:{}string serviceAccountName:8:string serviceAccount:9:string nodeName:10:string ' +
    'hostNetwork:11:bool hostPID:12:bool hostIPC:13:bool securityContext:14:core.PodSecurityContext ' +
    'imagePullSecrets:15:[]core.LocalObjectReference hostname:16:string subdomain:17:string ' +
    'affinity:18:core.Affinity schedulerName:19:string initContainers:20:[]core.Container ' +
    'automountServiceAccountToken:21:bool? tolerations:22:[]core.Toleration hostAliases:23:[]core.HostAlias ' +
    'priorityClassName:24:string priority:25:int32? dnsConfig:26:core.PodDNSConfig ' +
    'shareProcessNamespace:27:bool? readinessGates:28:[]core.PodReadinessGate runtimeClassName:29:string? ' +
    'enableServiceLinks:30:bool? preemptionPolicy:31:string? overhead:32:{}Quantity ' +
    'topologySpreadConstraints:33:[]core.TopologySpreadConstraint ' +
    'ephemeralContainers:34:[]core.EphemeralContainer setHostnameAsFQDN:35:bool? os:36:core.PodOS ' +
    'hostUsers:37:bool? schedulingGates:38:[]core.PodSchedulingGate resourceClaims:39:[]core.PodResourceClaim ' +
    'resources:40:core.ResourceRequirements hostnameOverride:41:string? ' +
    'schedulingGroup:43:core.PodSchedulingGroup evictionResponders:44:[]core.EvictionResponder',
  'core.PodStatus':
    'phase:1:string conditions:2:[]core.PodCondition message:3:string reason:4:string hostIP:5:string ' +
    'podIP:6:string startTime:7:Time? containerStatuses:8:[]core.ContainerStatus qosClass:9:string ' +
    'initContainerStatuses:10:[]core.ContainerStatus nominatedNodeName:11:string podIPs:12:[]core.PodIP ' +
    'ephemeralContainerStatuses:13:[]core.ContainerStatus resize:14:string ' +
    'resourceClaimStatuses:15:[]core.PodResourceClaimStatus hostIPs:16:[]core.HostIP ' +
    'observedGeneration:17:int64 extendedResourceClaimStatus:18:core.PodExtendedResourceClaimStatus ' +
    'allocatedResources:19:{}Quantity resources:20:core.ResourceRequirements ' +
    'nodeAllocatableResourceClaimStatuses:21:[]core.NodeAllocatableResourceClaimStatus ' +
    'volumeHealth:22:[]core.PodVolumeHealth',
  'core.PodTemplateSpec': 'metadata:1:meta.ObjectMeta spec:2:core.PodSpec',
  'core.PodVolumeHealth': 'name:1:string! healthConditions:2:[]core.VolumeHealthCondition lastTransitionTime:3:Time',
  'core.PortStatus': 'port:1:int32! protocol:2:string! error:3:string?',
  'core.PortworxVolumeSource': 'volumeID:1:string! fsType:2:string readOnly:3:bool',
  'core.PreferredSchedulingTerm': 'weight:1:int32! preference:2:core.NodeSelectorTerm',
  'core.Probe':
    '...:1:core.ProbeHandler initialDelaySeconds:2:int32 timeoutSeconds:3:int32 periodSeconds:4:int32 ' +
    'successThreshold:5:int32 failureThreshold:6:int32 terminationGracePeriodSeconds:7:int64?',
  'core.ProbeHandler':
    'exec:1:core.ExecAction httpGet:2:core.HTTPGetAction tcpSocket:3:core.TCPSocketAction ' +
    'grpc:4:core.GRPCAction',
  'core.ProjectedVolumeSource': 'sources:1:[]core.VolumeProjection defaultMode:2:int32? defaultUser:3:int64?',
  'core.QuobyteVolumeSource': 'registry:1:string! volume:2:string! readOnly:3:bool user:4:string group:5:string tenant:6:string',
  'core.RBDPersistentVolumeSource':
    'monitors:1:[]string image:2:string! fsType:3:string pool:4:string user:5:string keyring:6:string ' +
    'secretRef:7:core.SecretReference readOnly:8:bool',
  'core.RBDVolumeSource':
    'monitors:1:[]string image:2:string! fsType:3:string pool:4:string user:5:string keyring:6:string ' +
    'secretRef:7:core.LocalObjectReference readOnly:8:bool',
  'core.ResourceClaim': 'name:1:string! request:2:string',
  'core.ResourceFieldSelector': 'containerName:1:string resource:2:string! divisor:3:Quantity',
  'core.ResourceHealth': 'resourceID:1:string! health:2:string message:6:string?',
  'core.ResourceRequirements': 'limits:1:{}Quantity requests:2:{}Quantity claims:3:[]core.ResourceClaim',
  'core.ResourceStatus': 'name:1:string! resources:2:[]core.ResourceHealth',
  'core.SELinuxOptions': 'user:1:string role:2:string type:3:string level:4:string',
  'core.ScaleIOPersistentVolumeSource':
    'gateway:1:string! system:2:string! secretRef:3:core.SecretReference sslEnabled:4:bool ' +
    'protectionDomain:5:string storagePool:6:string storageMode:7:string volumeName:8:string fsType:9:string ' +
    'readOnly:10:bool',
  'core.ScaleIOVolumeSource':
    'gateway:1:string! system:2:string! secretRef:3:core.LocalObjectReference sslEnabled:4:bool ' +
    'protectionDomain:5:string storagePool:6:string storageMode:7:string volumeName:8:string fsType:9:string ' +
    'readOnly:10:bool',
  'core.SeccompProfile': 'type:1:string! localhostProfile:2:string?',
  'core.Secret': 'metadata:1:meta.ObjectMeta data:2:{}bytes type:3:string stringData:4:{}string immutable:5:bool?',
  'core.SecretEnvSource': '...:1:core.LocalObjectReference optional:2:bool?',
  'core.SecretKeySelector': '...:1:core.LocalObjectReference key:2:string! optional:3:bool?',
  'core.SecretList': 'metadata:1:meta.ListMeta items:2:[]core.Secret',
  'core.SecretProjection': '...:1:core.LocalObjectReference items:2:[]core.KeyToPath optional:4:bool?',
  'core.SecretReference': 'name:1:string namespace:2:string',
  'core.SecretVolumeSource': 'secretName:1:string items:2:[]core.KeyToPath defaultMode:3:int32? optional:4:bool? defaultUser:5:int64?',
  'core.SecurityContext':
    'capabilities:1:core.Capabilities privileged:2:bool? seLinuxOptions:3:core.SELinuxOptions ' +
    'runAsUser:4:int64? runAsNonRoot:5:bool? readOnlyRootFilesystem:6:bool? allowPrivilegeEscalation:7:bool? ' +
    'runAsGroup:8:int64? procMount:9:string? windowsOptions:10:core.WindowsSecurityContextOptions ' +
    'seccompProfile:11:core.SeccompProfile appArmorProfile:12:core.AppArmorProfile',
  'core.Service': 'metadata:1:meta.ObjectMeta spec:2:core.ServiceSpec status:3:core.ServiceStatus',
  'core.ServiceAccount':
    'metadata:1:meta.ObjectMeta secrets:2:[]core.ObjectReference ' +
    'imagePullSecrets:3:[]core.LocalObjectReference automountServiceAccountToken:4:bool?',
  'core.ServiceAccountList': 'metadata:1:meta.ListMeta items:2:[]core.ServiceAccount',
  'core.ServiceAccountTokenProjection': 'audience:1:string expirationSeconds:2:int64? path:3:string! user:4:int64?',
  'core.ServiceList': 'metadata:1:meta.ListMeta items:2:[]core.Service',
  'core.ServicePort':
    'name:1:string protocol:2:string port:3:int32! targetPort:4:IntOrString nodePort:5:int32 ' +
    'appProtocol:6:string?',
  'core.ServiceSpec':
    'ports:1:[]core.ServicePort selector:2:{}string clusterIP:3:string type:4:string externalIPs:5:[]string ' +
    'sessionAffinity:7:string loadBalancerIP:8:string loadBalancerSourceRanges:9:[]string ' +
    'externalName:10:string externalTrafficPolicy:11:string healthCheckNodePort:12:int32 ' +
    'publishNotReadyAddresses:13:bool sessionAffinityConfig:14:core.SessionAffinityConfig ' +
    'ipFamilyPolicy:17:string? clusterIPs:18:[]string ipFamilies:19:[]string ' +
    'allocateLoadBalancerNodePorts:20:bool? loadBalancerClass:21:string? internalTrafficPolicy:22:string? ' +
    'trafficDistribution:23:string?',
  'core.ServiceStatus': 'loadBalancer:1:core.LoadBalancerStatus conditions:2:[]meta.Condition',
  'core.SessionAffinityConfig': 'clientIP:1:core.ClientIPConfig',
  'core.SleepAction': 'seconds:1:int64!',
  'core.StorageOSPersistentVolumeSource':
    'volumeName:1:string volumeNamespace:2:string fsType:3:string readOnly:4:bool ' +
    'secretRef:5:core.ObjectReference',
  'core.StorageOSVolumeSource':
    'volumeName:1:string volumeNamespace:2:string fsType:3:string readOnly:4:bool ' +
    'secretRef:5:core.LocalObjectReference',
  'core.Sysctl': 'name:1:string! value:2:string!',
  'core.TCPSocketAction': 'port:1:IntOrString host:2:string',
  'core.Taint': 'key:1:string! value:2:string effect:3:string! timeAdded:4:Time?',
  'core.Toleration': 'key:1:string operator:2:string value:3:string effect:4:string tolerationSeconds:5:int64?',
  'core.TopologySelectorLabelRequirement': 'key:1:string! values:2:[]string',
  'core.TopologySelectorTerm': 'matchLabelExpressions:1:[]core.TopologySelectorLabelRequirement',
  'core.TopologySpreadConstraint':
    'maxSkew:1:int32! topologyKey:2:string! whenUnsatisfiable:3:string! labelSelector:4:meta.LabelSelector ' +
    'minDomains:5:int32? nodeAffinityPolicy:6:string? nodeTaintsPolicy:7:string? matchLabelKeys:8:[]string',
  'core.TypedLocalObjectReference': 'apiGroup:1:string? kind:2:string! name:3:string!',
  'core.TypedObjectReference': 'apiGroup:1:string? kind:2:string! name:3:string! namespace:4:string?',
  'core.Volume': 'name:1:string! ...:2:core.VolumeSource',
  'core.VolumeDevice': 'name:1:string! devicePath:2:string!',
  'core.VolumeHealthCondition': 'status:1:string! reason:2:string! message:3:string',
  'core.VolumeHealthStatus': 'healthConditions:1:[]core.VolumeHealthCondition lastTransitionTime:2:Time',
  'core.VolumeMount':
    'name:1:string! readOnly:2:bool mountPath:3:string! subPath:4:string mountPropagation:5:string? ' +
    'subPathExpr:6:string recursiveReadOnly:7:string? bindMountOptions:8:[]string',
  'core.VolumeMountStatus':
    'name:1:string! mountPath:2:string! readOnly:3:bool recursiveReadOnly:4:string? ' +
    'volumeStatus:5:core.VolumeStatus',
  'core.VolumeNodeAffinity': 'required:1:core.NodeSelector',
  'core.VolumeProjection':
    'secret:1:core.SecretProjection downwardAPI:2:core.DownwardAPIProjection ' +
    'configMap:3:core.ConfigMapProjection serviceAccountToken:4:core.ServiceAccountTokenProjection ' +
    'clusterTrustBundle:5:core.ClusterTrustBundleProjection podCertificate:6:core.PodCertificateProjection',
  'core.VolumeResourceRequirements': 'limits:1:{}Quantity requests:2:{}Quantity',
  'core.VolumeSource':
    'hostPath:1:core.HostPathVolumeSource emptyDir:2:core.EmptyDirVolumeSource ' +
    'gcePersistentDisk:3:core.GCEPersistentDiskVolumeSource ' +
    'awsElasticBlockStore:4:core.AWSElasticBlockStoreVolumeSource gitRepo:5:core.GitRepoVolumeSource ' +
    'secret:6:core.SecretVolumeSource nfs:7:core.NFSVolumeSource iscsi:8:core.ISCSIVolumeSource ' +
    'glusterfs:9:core.GlusterfsVolumeSource persistentVolumeClaim:10:core.PersistentVolumeClaimVolumeSource ' +
    'rbd:11:core.RBDVolumeSource flexVolume:12:core.FlexVolumeSource cinder:13:core.CinderVolumeSource ' +
    'cephfs:14:core.CephFSVolumeSource flocker:15:core.FlockerVolumeSource ' +
    'downwardAPI:16:core.DownwardAPIVolumeSource fc:17:core.FCVolumeSource ' +
    'azureFile:18:core.AzureFileVolumeSource configMap:19:core.ConfigMapVolumeSource ' +
    'vsphereVolume:20:core.VsphereVirtualDiskVolumeSource quobyte:21:core.QuobyteVolumeSource ' +
    'azureDisk:22:core.AzureDiskVolumeSource photonPersistentDisk:23:core.PhotonPersistentDiskVolumeSource ' +
    'portworxVolume:24:core.PortworxVolumeSource scaleIO:25:core.ScaleIOVolumeSource ' +
    'projected:26:core.ProjectedVolumeSource storageos:27:core.StorageOSVolumeSource ' +
    'csi:28:core.CSIVolumeSource ephemeral:29:core.EphemeralVolumeSource image:30:core.ImageVolumeSource',
  'core.VolumeStatus': 'image:1:core.ImageVolumeStatus',
  'core.VsphereVirtualDiskVolumeSource': 'volumePath:1:string! fsType:2:string storagePolicyName:3:string storagePolicyID:4:string',
  'core.WeightedPodAffinityTerm': 'weight:1:int32! podAffinityTerm:2:core.PodAffinityTerm',
  'core.WindowsSecurityContextOptions':
    'gmsaCredentialSpecName:1:string? gmsaCredentialSpec:2:string? runAsUserName:3:string? ' +
    'hostProcess:4:bool?',

  'events.Event':
    'metadata:1:meta.ObjectMeta eventTime:2:MicroTime series:3:events.EventSeries ' +
    'reportingController:4:string reportingInstance:5:string action:6:string reason:7:string ' +
    'regarding:8:core.ObjectReference related:9:core.ObjectReference note:10:string type:11:string ' +
    'deprecatedSource:12:core.EventSource deprecatedFirstTimestamp:13:Time deprecatedLastTimestamp:14:Time ' +
    'deprecatedCount:15:int32',
  'events.EventList': 'metadata:1:meta.ListMeta items:2:[]events.Event',
  'events.EventSeries': 'count:1:int32! lastObservedTime:2:MicroTime',

  'meta.Condition':
    'type:1:string! status:2:string! observedGeneration:3:int64 lastTransitionTime:4:Time reason:5:string! ' +
    'message:6:string!',
  'meta.DeleteOptions':
    'gracePeriodSeconds:1:int64? preconditions:2:meta.Preconditions orphanDependents:3:bool? ' +
    'propagationPolicy:4:string? dryRun:5:[]string ignoreStoreReadErrorWithClusterBreakingPotential:6:bool?',
  'meta.LabelSelector': 'matchLabels:1:{}string matchExpressions:2:[]meta.LabelSelectorRequirement',
  'meta.LabelSelectorRequirement': 'key:1:string! operator:2:string! values:3:[]string',
  'meta.ListMeta':
    'selfLink:1:string resourceVersion:2:string continue:3:string remainingItemCount:4:int64? ' +
    'shardInfo:5:meta.ShardInfo',
  'meta.ManagedFieldsEntry':
    'manager:1:string operation:2:string apiVersion:3:string time:4:Time? fieldsType:6:string ' +
    'fieldsV1:7:FieldsV1 subresource:8:string',
  'meta.ObjectMeta':
    'name:1:string generateName:2:string namespace:3:string selfLink:4:string uid:5:string ' +
    'resourceVersion:6:string generation:7:int64 creationTimestamp:8:Time deletionTimestamp:9:Time? ' +
    'deletionGracePeriodSeconds:10:int64? labels:11:{}string annotations:12:{}string ' +
    'ownerReferences:13:[]meta.OwnerReference finalizers:14:[]string ' +
    'managedFields:17:[]meta.ManagedFieldsEntry',
  'meta.OwnerReference':
    'kind:1:string! name:3:string! uid:4:string! apiVersion:5:string! controller:6:bool? ' +
    'blockOwnerDeletion:7:bool?',
  'meta.Preconditions': 'uid:1:string? resourceVersion:2:string?',
  'meta.ShardInfo': 'selector:1:string!',
  'meta.Status':
    'metadata:1:meta.ListMeta status:2:string message:3:string reason:4:string details:5:meta.StatusDetails ' +
    'code:6:int32',
  'meta.StatusCause': 'reason:1:string message:2:string field:3:string',
  'meta.StatusDetails':
    'name:1:string group:2:string kind:3:string causes:4:[]meta.StatusCause retryAfterSeconds:5:int32 ' +
    'uid:6:string',

  'rbac.AggregationRule': 'clusterRoleSelectors:1:[]meta.LabelSelector',
  'rbac.ClusterRole': 'metadata:1:meta.ObjectMeta rules:2:[]rbac.PolicyRule aggregationRule:3:rbac.AggregationRule',
  'rbac.ClusterRoleBinding': 'metadata:1:meta.ObjectMeta subjects:2:[]rbac.Subject roleRef:3:rbac.RoleRef',
  'rbac.ClusterRoleBindingList': 'metadata:1:meta.ListMeta items:2:[]rbac.ClusterRoleBinding',
  'rbac.ClusterRoleList': 'metadata:1:meta.ListMeta items:2:[]rbac.ClusterRole',
  'rbac.PolicyRule':
    'verbs:1:[]string apiGroups:2:[]string resources:3:[]string resourceNames:4:[]string ' +
    'nonResourceURLs:5:[]string',
  'rbac.Role': 'metadata:1:meta.ObjectMeta rules:2:[]rbac.PolicyRule',
  'rbac.RoleBinding': 'metadata:1:meta.ObjectMeta subjects:2:[]rbac.Subject roleRef:3:rbac.RoleRef',
  'rbac.RoleBindingList': 'metadata:1:meta.ListMeta items:2:[]rbac.RoleBinding',
  'rbac.RoleList': 'metadata:1:meta.ListMeta items:2:[]rbac.Role',
  'rbac.RoleRef': 'apiGroup:1:string! kind:2:string! name:3:string!',
  'rbac.Subject': 'kind:1:string! apiGroup:2:string name:3:string! namespace:4:string',

  'storage.StorageClass':
    'metadata:1:meta.ObjectMeta provisioner:2:string! parameters:3:{}string reclaimPolicy:4:string? ' +
    'mountOptions:5:[]string allowVolumeExpansion:6:bool? volumeBindingMode:7:string? ' +
    'allowedTopologies:8:[]core.TopologySelectorTerm',
  'storage.StorageClassList': 'metadata:1:meta.ListMeta items:2:[]storage.StorageClass',
  'storage.VolumeAttachment': 'metadata:1:meta.ObjectMeta spec:2:storage.VolumeAttachmentSpec status:3:storage.VolumeAttachmentStatus',
  'storage.VolumeAttachmentList': 'metadata:1:meta.ListMeta items:2:[]storage.VolumeAttachment',
  'storage.VolumeAttachmentSource': 'persistentVolumeName:1:string? inlineVolumeSpec:2:core.PersistentVolumeSpec',
  'storage.VolumeAttachmentSpec': 'attacher:1:string! source:2:storage.VolumeAttachmentSource nodeName:3:string!',
  'storage.VolumeAttachmentStatus':
    'attached:1:bool! attachmentMetadata:2:{}string attachError:3:storage.VolumeError ' +
    'detachError:4:storage.VolumeError',
  'storage.VolumeError': 'time:1:Time message:2:string errorCode:3:int32?',

  'authn.AttestationValue': '=items:1:[]string',
  // apimachinery pkg/apis/meta/v1/watch.go and pkg/runtime/generated.proto
  'meta.WatchEvent': 'type:1:string! object:2:RawExtension',
  'runtime.TypeMeta': 'apiVersion:1:string kind:2:string',
  'runtime.Unknown': 'typeMeta:1:runtime.TypeMeta raw:2:bytes contentEncoding:3:string contentType:4:string',
};
