/**
 * Events: core/v1 Event (`pkg/registry/core/event/strategy.go`) and events.k8s.io/v1 Event, the same
 * storage seen through conversion (`pkg/apis/events/v1/conversion.go`). Validation as
 * `ValidateEventCreate`/`ValidateEventUpdate`: loose through /api/v1, strict through events.k8s.io/v1.
 */
import type { FieldError, KindSpec, KubeObject } from '../types.ts';
import { expectObject } from './common/decode.ts';
import { deepEqual, immutable, invalid, required } from './common/field.ts';
import { validateObjectMeta } from './common/meta.ts';
import { isDNS1123Subdomain, isQualifiedName, isValidPathSegmentName } from './common/names.ts';
import { objectMetaFields } from './common/selectable.ts';
import { makeStrategy, STANDARD_VERBS } from './common/strategy.ts';
import { column, NAME_COLUMN, since } from './common/table.ts';

/** Field pairs: core/v1 name → events.k8s.io/v1 name. */
const RENAMES: Array<[string, string]> = [
  ['involvedObject', 'regarding'],
  ['message', 'note'],
  ['reportingComponent', 'reportingController'],
  ['source', 'deprecatedSource'],
  ['firstTimestamp', 'deprecatedFirstTimestamp'],
  ['lastTimestamp', 'deprecatedLastTimestamp'],
  ['count', 'deprecatedCount'],
];
const SHARED = ['eventTime', 'series', 'reportingInstance', 'action', 'reason', 'related', 'type'];

/** core/v1 Event → events.k8s.io/v1 Event. */
export function eventToV1(stored: KubeObject): KubeObject {
  const view: KubeObject = { kind: 'Event', apiVersion: 'events.k8s.io/v1', metadata: structuredClone(stored.metadata) };
  for (const [core, v1] of RENAMES) if (stored[core] !== undefined && stored[core] !== null && stored[core] !== '') view[v1] = structuredClone(stored[core]);
  for (const k of SHARED) if (stored[k] !== undefined && stored[k] !== '') view[k] = structuredClone(stored[k]);
  view.eventTime ??= null;
  if (view.deprecatedSource && Object.keys(view.deprecatedSource).length === 0) delete view.deprecatedSource;
  return view;
}

/** events.k8s.io/v1 Event → core/v1 Event. */
export function eventFromV1(view: KubeObject): KubeObject {
  const stored: KubeObject = { kind: 'Event', apiVersion: 'v1', metadata: structuredClone(view.metadata ?? {}) };
  for (const [core, v1] of RENAMES) if (view[v1] !== undefined && view[v1] !== null) stored[core] = structuredClone(view[v1]);
  for (const k of SHARED) if (view[k] !== undefined) stored[k] = structuredClone(view[k]);
  stored.involvedObject ??= {};
  return stored;
}

/** Whether an object is in the events.k8s.io/v1 shape (else core/v1). */
const isV1View = (e: KubeObject): boolean =>
  e.apiVersion === 'events.k8s.io/v1' || e.regarding !== undefined || e.note !== undefined || e.reportingController !== undefined;
const asCore = (e: KubeObject): KubeObject => (isV1View(e) ? eventFromV1(e) : e);

const isZeroTime = (t: unknown): boolean => t === undefined || t === null || t === '';

/** `legacyValidateEvent`: the namespace pairing, and the reporting fields for new-style events. */
export function legacyValidateEvent(e: KubeObject, coreRequest: boolean): FieldError[] {
  const errs: FieldError[] = [];
  const ns = e.metadata?.namespace ?? '';
  const involvedNs = e.involvedObject?.namespace ?? '';
  const rcField = coreRequest ? 'reportingComponent' : 'reportingController';
  if (isZeroTime(e.eventTime)) {
    if (involvedNs === '' ? ns !== '' && ns !== 'default' : ns !== involvedNs) {
      errs.push(invalid('involvedObject.namespace', involvedNs, 'does not match event.namespace'));
    }
  } else {
    if (involvedNs === '' && ns !== 'default' && ns !== 'kube-system') {
      errs.push(invalid('involvedObject.namespace', involvedNs, 'does not match event.namespace'));
    }
    const rc = e.reportingComponent ?? '';
    if (!rc) errs.push(required(rcField));
    for (const m of isQualifiedName(rc)) errs.push(invalid(rcField, rc, m));
    const limit = (field: string, value: string | undefined, max: number, need: boolean): void => {
      if (need && !value) errs.push(required(field));
      if ((value ?? '').length > max) errs.push(invalid(field, '', `can have at most ${max} characters`));
    };
    limit('reportingInstance', e.reportingInstance, 128, true);
    limit('action', e.action, 128, true);
    limit('reason', e.reason, 128, true);
    limit('message', e.message, 1024, false);
  }
  for (const m of isDNS1123Subdomain(ns)) errs.push(invalid('namespace', ns, m));
  return errs;
}

/** The extra rules of an events.k8s.io/v1 create (`ValidateEventCreate` for newer group versions). */
function strictCreate(e: KubeObject): FieldError[] {
  const errs = [...legacyValidateEvent(e, false), ...validateObjectMeta(e, true, isDNS1123Subdomain)];
  if (isZeroTime(e.eventTime)) errs.push(required('eventTime'));
  if (e.type !== 'Normal' && e.type !== 'Warning') errs.push(invalid('type', '', `has invalid value: ${e.type ?? ''}`));
  if (!isZeroTime(e.firstTimestamp)) errs.push(invalid('firstTimestamp', '', 'needs to be unset'));
  if (!isZeroTime(e.lastTimestamp)) errs.push(invalid('lastTimestamp', '', 'needs to be unset'));
  if (e.count) errs.push(invalid('count', '', 'needs to be unset'));
  if (e.source?.component || e.source?.host) errs.push(invalid('source', '', 'needs to be unset'));
  if (e.series) {
    if (!(e.series.count >= 2)) errs.push(invalid('series.count', '', 'should be at least 2'));
    if (isZeroTime(e.series.lastObservedTime)) errs.push(required('series.lastObservedTime'));
  }
  return errs;
}

function strictUpdate(e: KubeObject, old: KubeObject): FieldError[] {
  const errs = legacyValidateEvent(e, false);
  const fields = ['involvedObject', 'reason', 'message', 'source', 'firstTimestamp', 'lastTimestamp', 'count', 'action', 'related',
    'eventTime', 'reportingComponent', 'reportingInstance', 'type'];
  for (const f of fields) {
    const a = e[f] ?? null;
    const b = old[f] ?? null;
    if (!deepEqual(a, b)) errs.push(...immutable(f, a, b));
  }
  return errs;
}

/** `EventToSelectableFields`. */
export function eventSelectableFields(view: KubeObject): Record<string, string> {
  const e = asCore(view);
  const io = e.involvedObject ?? {};
  return {
    ...objectMetaFields(e, true),
    'involvedObject.kind': io.kind ?? '',
    'involvedObject.namespace': io.namespace ?? '',
    'involvedObject.name': io.name ?? '',
    'involvedObject.uid': io.uid ?? '',
    'involvedObject.apiVersion': io.apiVersion ?? '',
    'involvedObject.resourceVersion': io.resourceVersion ?? '',
    'involvedObject.fieldPath': io.fieldPath ?? '',
    reason: e.reason ?? '',
    reportingComponent: e.reportingComponent ?? '',
    source: e.source?.component || e.reportingComponent || '',
    type: e.type ?? '',
  };
}

function formatSource(e: KubeObject): string {
  const [c, h] = e.source?.component ? [e.source.component, e.source.host] : [e.reportingComponent, e.reportingInstance];
  return h ? `${c ?? ''}, ${h}` : (c ?? '');
}

const EVENT_TABLE: NonNullable<KindSpec['table']> = {
  columns: [
    column('Last Seen', 'string', 'The last time this event was observed.'),
    column('Type', 'string', 'Type of this event (Normal, Warning), new types could be added in the future.'),
    column('Reason', 'string', 'This should be a short, machine understandable string that gives the reason for this event being generated.'),
    column('Object', 'string', 'The object this Event is about.'),
    column('Subobject', 'string', 'The subobject this Event is about.', 1),
    column('Source', 'string', 'The component reporting this event.', 1),
    column('Message', 'string', 'A human-readable description of the status of this operation.'),
    column('First Seen', 'string', 'The first time this event was observed.', 1),
    column('Count', 'integer', 'The number of times this event has occurred.', 1),
    { ...NAME_COLUMN, priority: 1 },
  ],
  row(view, now) {
    const e = asCore(view);
    let first = since(e.firstTimestamp, now);
    if (isZeroTime(e.firstTimestamp)) first = since(e.eventTime, now);
    let last = isZeroTime(e.lastTimestamp) ? first : since(e.lastTimestamp, now);
    let count = e.count ?? 0;
    if (e.series) {
      last = since(e.series.lastObservedTime, now);
      count = e.series.count ?? 0;
    } else if (count === 0) count = 1;
    const io = e.involvedObject ?? {};
    const kind = String(io.kind ?? '').toLowerCase();
    const target = io.name ? `${kind}/${io.name}` : kind;
    return [last, e.type ?? '', e.reason ?? '', target, io.fieldPath ?? '', formatSource(e), String(e.message ?? '').trim(), first, count, e.metadata.name];
  },
};

/** core/v1 Event discovery facts, strategy and printer. */
export const coreEvents: KindSpec = {
  group: '',
  version: 'v1',
  kind: 'Event',
  plural: 'events',
  singular: 'event',
  namespaced: true,
  shortNames: ['ev'],
  subresources: [],
  verbs: STANDARD_VERBS,
  returnDeletedObject: false,
  allowUnconditionalUpdate: true,
  allowCreateOnUpdate: true,
  selectableFields: eventSelectableFields,
  table: EVENT_TABLE,
  strategy: makeStrategy({
    namespaced: true,
    nameRule: isValidPathSegmentName,
    validateMeta: false,
    decode(e) {
      expectObject('Event', e.involvedObject, 'Event.involvedObject', 'v1.ObjectReference');
      expectObject('Event', e.source, 'Event.source', 'v1.EventSource');
    },
    defaults(e) {
      e.involvedObject ??= {};
      if (e.firstTimestamp === undefined) e.firstTimestamp = null;
      if (e.lastTimestamp === undefined) e.lastTimestamp = null;
      if (e.eventTime === undefined) e.eventTime = null;
      e.reportingComponent ??= '';
      e.reportingInstance ??= '';
    },
    validate: (e) => legacyValidateEvent(e, true),
    validateUpdate: (e) => legacyValidateEvent(e, true),
  }),
};

/** events.k8s.io/v1 Event: the same objects as {@link coreEvents}, converted on the way in and out. */
export const eventsV1Events: KindSpec = {
  group: 'events.k8s.io',
  version: 'v1',
  kind: 'Event',
  plural: 'events',
  singular: 'event',
  namespaced: true,
  shortNames: ['ev'],
  subresources: [],
  verbs: STANDARD_VERBS,
  returnDeletedObject: false,
  allowUnconditionalUpdate: true,
  allowCreateOnUpdate: true,
  selectableFields: eventSelectableFields,
  table: EVENT_TABLE,
  storedAs: { kind: 'Event', group: '', toView: eventToV1, fromView: eventFromV1 },
  strategy: makeStrategy({
    namespaced: true,
    nameRule: isDNS1123Subdomain,
    validateMeta: false,
    validate: (e) => strictCreate(asCore(e)),
    validateUpdate: (e, old) => strictUpdate(asCore(e), asCore(old)),
  }),
};
