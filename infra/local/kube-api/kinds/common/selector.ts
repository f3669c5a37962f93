/**
 * `ValidateLabelSelector` (apimachinery `pkg/apis/meta/v1/validation`).
 */
import type { FieldError } from '../../types.ts';
import { forbidden, invalid, required } from './field.ts';
import { validateLabels } from './meta.ts';
import { isQualifiedName } from './names.ts';

interface Requirement {
  key?: string;
  operator?: string;
  values?: string[];
}

/** Validates `{matchLabels, matchExpressions}` under `field`. */
export function validateLabelSelector(selector: { matchLabels?: Record<string, string>; matchExpressions?: Requirement[] } | undefined, field: string): FieldError[] {
  if (!selector) return [];
  const errs = validateLabels(selector.matchLabels, `${field}.matchLabels`);
  (selector.matchExpressions ?? []).forEach((r, i) => {
    const f = `${field}.matchExpressions[${i}]`;
    const values = r.values ?? [];
    switch (r.operator) {
      case 'In':
      case 'NotIn':
        if (values.length === 0) errs.push(required(`${f}.values`, "must be specified when `operator` is 'In' or 'NotIn'"));
        break;
      case 'Exists':
      case 'DoesNotExist':
        if (values.length > 0) errs.push(forbidden(`${f}.values`, "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"));
        break;
      default:
        errs.push(invalid(`${f}.operator`, r.operator ?? '', 'not a valid selector operator'));
    }
    for (const m of isQualifiedName(r.key ?? '')) errs.push(invalid(`${f}.key`, r.key ?? '', m));
  });
  return errs;
}
