import { isProvider, type Provider } from '@hookline/signing';
import { parseCidrList, type Cidr } from '@hookline/http';

/** One ingester as ingest needs it: resolved once, then served from the cache. */
export interface IngesterSettings {
  id: string;
  tenantId: string;
  plan: string;
  provider: Provider;
  active: boolean;
  /** Opened signing secrets; none means unsigned requests are accepted. */
  secrets: string[];
  toleranceSeconds: number;
  eventTypePath: string | null;
  /** header name (lower case) -> expected value, or null for "must be present". */
  requiredHeaders: [string, string | null][];
  /**
   * Null when no allowlist is configured. A stored allowlist applies whatever the tenant's
   * plan: the plan gate (Pro and above) is on setting it up, in the API; a downgrade must not
   * turn a security control off (fail closed).
   */
  allowlist: Cidr[] | null;
  /** config.twilio_url_suffixes: the only suffixes after `/in/<id>` a Twilio signature is checked on. */
  twilioUrlSuffixes: string[];
}

export interface IngesterRow {
  id: string;
  tenant_id: string;
  provider: string;
  config: unknown;
  secrets: string[];
  state: string;
  plan: string;
}

/**
 * Reads the non-secret settings of `ingesters.config`. The API validates them when
 * saved; here a bad value falls back to the default, except the allowlist, which fails
 * closed (an entry that is not a CIDR matches nothing, but the list still applies), and
 * twilio_url_suffixes (an entry that is not a string is dropped, the list still applies).
 */
export function toSettings(row: IngesterRow, secrets: string[], defaultTolerance: number): IngesterSettings {
  const cfg = row.config !== null && typeof row.config === 'object' && !Array.isArray(row.config) ? (row.config as Record<string, unknown>) : {};
  const tol = cfg['tolerance_seconds'];
  const path = cfg['event_type_path'];
  const rules = cfg['required_headers'];
  const list = cfg['ip_allowlist'];
  const suffixes = cfg['twilio_url_suffixes'];
  const requiredHeaders: [string, string | null][] = [];
  if (rules !== null && typeof rules === 'object' && !Array.isArray(rules)) {
    for (const [name, value] of Object.entries(rules as Record<string, unknown>)) {
      requiredHeaders.push([name.toLowerCase(), typeof value === 'string' ? value : null]);
    }
  }
  const entries = Array.isArray(list) ? list.filter((x): x is string => typeof x === 'string') : [];
  const enforce = Array.isArray(list) && list.length > 0;
  return {
    id: row.id,
    tenantId: row.tenant_id,
    plan: row.plan,
    // The API refuses unknown providers; should one slip in, the strict generic scheme applies.
    provider: isProvider(row.provider) ? row.provider : 'generic',
    active: row.state === 'ACTIVE',
    secrets,
    toleranceSeconds: typeof tol === 'number' && Number.isInteger(tol) && tol > 0 ? tol : defaultTolerance,
    eventTypePath: typeof path === 'string' && path.trim() !== '' ? path : null,
    requiredHeaders,
    allowlist: enforce ? parseCidrList(entries).cidrs : null,
    // Fails closed like the allowlist: a stored list keeps only its strings; none set means the bare hook URL.
    twilioUrlSuffixes: Array.isArray(suffixes) ? suffixes.filter((x): x is string => typeof x === 'string') : [''],
  };
}
