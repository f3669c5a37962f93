/**
 * Name and key validators with apimachinery's messages (`pkg/util/validation/validation.go`).
 * Each returns the list of problems (empty when valid), as upstream's `Is*` functions do.
 */

const DNS1123_LABEL = '[a-z0-9]([-a-z0-9]*[a-z0-9])?';
const DNS1123_SUBDOMAIN = `${DNS1123_LABEL}(\\.${DNS1123_LABEL})*`;
const DNS1035_LABEL = '[a-z]([-a-z0-9]*[a-z0-9])?';
const QUALIFIED_NAME = '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]';
const LABEL_VALUE = `(${QUALIFIED_NAME})?`;

const anchored = (re: string): RegExp => new RegExp(`^${re}$`);
const dns1123LabelRe = anchored(DNS1123_LABEL);
const dns1123SubdomainRe = anchored(DNS1123_SUBDOMAIN);
const dns1035LabelRe = anchored(DNS1035_LABEL);
const qualifiedNameRe = anchored(QUALIFIED_NAME);
const labelValueRe = anchored(LABEL_VALUE);

/** `must be no more than N characters`. */
export const maxLenError = (n: number): string => `must be no more than ${n} characters`;

/** `regexError` as upstream formats it (note the double space before each further example). */
function regexError(msg: string, re: string, ...examples: string[]): string {
  const ex = examples.map((e) => `'${e}'`).join(',  or ');
  return `${msg} (e.g. ${ex}, regex used for validation is '${re}')`;
}

export const DNS1123_LABEL_ERROR = regexError(
  "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character",
  DNS1123_LABEL, 'my-name', '123-abc');
export const DNS1123_SUBDOMAIN_ERROR = regexError(
  "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character",
  DNS1123_SUBDOMAIN, 'example.com');
export const DNS1035_LABEL_ERROR = regexError(
  "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character",
  DNS1035_LABEL, 'my-name', 'abc-123');
const QUALIFIED_NAME_ERROR = regexError(
  "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character",
  QUALIFIED_NAME, 'MyName', 'my.name', '123-abc');
const LABEL_VALUE_ERROR = regexError(
  "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character",
  LABEL_VALUE, 'MyValue', 'my_value', '12345');

/** `IsDNS1123Label`: ≤63, lowercase alphanumerics and '-'. */
export function isDNS1123Label(value: string): string[] {
  const errs: string[] = [];
  if (value.length > 63) errs.push(maxLenError(63));
  if (!dns1123LabelRe.test(value)) errs.push(DNS1123_LABEL_ERROR);
  return errs;
}

/** `IsDNS1123Subdomain`: ≤253, dot-separated DNS-1123 labels. */
export function isDNS1123Subdomain(value: string): string[] {
  const errs: string[] = [];
  if (value.length > 253) errs.push(maxLenError(253));
  if (!dns1123SubdomainRe.test(value)) errs.push(DNS1123_SUBDOMAIN_ERROR);
  return errs;
}

/** `IsDNS1035Label`: ≤63, starts with a letter. */
export function isDNS1035Label(value: string): string[] {
  const errs: string[] = [];
  if (value.length > 63) errs.push(maxLenError(63));
  if (!dns1035LabelRe.test(value)) errs.push(DNS1035_LABEL_ERROR);
  return errs;
}

/** `IsQualifiedName`: optional DNS-subdomain prefix and '/', then a name part ≤63. */
export function isQualifiedName(value: string): string[] {
  const errs: string[] = [];
  const parts = value.split('/');
  let name: string;
  if (parts.length === 1) {
    name = parts[0];
  } else if (parts.length === 2) {
    const [prefix] = parts;
    name = parts[1];
    if (prefix.length === 0) errs.push('prefix part must be non-empty');
    else errs.push(...isDNS1123Subdomain(prefix).map((m) => `prefix part ${m}`));
  } else {
    return [
      "a qualified name " + regexError(
        "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character",
        QUALIFIED_NAME, 'MyName', 'my.name', '123-abc') + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
    ];
  }
  if (name.length === 0) errs.push('name part must be non-empty');
  else if (name.length > 63) errs.push(`name part ${maxLenError(63)}`);
  if (!qualifiedNameRe.test(name)) errs.push(QUALIFIED_NAME_ERROR);
  return errs;
}

/** `IsValidLabelValue`: ≤63, may be empty. */
export function isValidLabelValue(value: string): string[] {
  const errs: string[] = [];
  if (value.length > 63) errs.push(maxLenError(63));
  if (!labelValueRe.test(value)) errs.push(LABEL_VALUE_ERROR);
  return errs;
}

/** `path.IsValidPathSegmentName`: the only rule for core/v1 Event names. */
export function isValidPathSegmentName(value: string): string[] {
  if (value === '.' || value === '..') return [`may not be '${value}'`];
  const errs: string[] = [];
  for (const illegal of ['/', '%']) {
    if (value.includes(illegal)) errs.push(`may not contain '${illegal}'`);
  }
  return errs;
}
