import type { CapabilityDef } from './capability-types';

/**
 * What SPEC.md names beyond the v1 runtime: declared so the manifest says so. Ids stay
 * stable; a status is worked out from what exists, so one built since (GAP-001, the edge
 * agent) names its implementation and proofs here.
 */
export const GAP_CAPABILITIES: readonly CapabilityDef[] = [
  {
    id: 'private_edge_delivery',
    proof_id: 'GAP-001',
    name: 'Private delivery through an edge plane',
    description: 'Delivery into a private network through a lightweight edge or a cluster-based edge plane.',
    implementation: ['packages/edge/src/agent.ts', 'services/api/src/edge/lease-work.ts', 'services/api/src/edge/record-reports.ts'],
    proofs: [
      {
        file: 'test/edge-agent.e2e.test.ts',
        tests: ['an agent killed mid-delivery: the lease expires and a second agent delivers it', 'two agents share the work: every delivery is received once'],
      },
    ],
    otherwise: 'planned',
    non_claims: [
      'Edge agents pull work over outbound long-polls (no server-sent events); delivery through them is at-least-once.',
      'Per-destination mTLS applies to direct delivery only, not through an edge agent, which never holds destination secrets.',
    ],
  },
  {
    id: 'git_configuration',
    proof_id: 'GAP-002',
    name: 'Git-based configuration',
    description: 'Configuration applied from a Git repository.',
    implementation: [],
    proofs: [],
    otherwise: 'planned',
    non_claims: ['Git-based configuration is planned for release v1.1 and not implemented.'],
  },
  {
    id: 'automatic_cert_rotation',
    proof_id: 'GAP-003',
    name: 'Automatic certificate rotation',
    description: 'Rotation of mTLS client certificates without operator action.',
    implementation: [],
    proofs: [],
    otherwise: 'not_claimed',
    non_claims: ['Certificates are rotated manually.'],
  },
  {
    id: 'multi_region_failover',
    proof_id: 'GAP-004',
    name: 'Multi-region failover',
    description: 'Automatic failover of the service between regions.',
    implementation: [],
    proofs: [],
    otherwise: 'not_claimed',
    non_claims: ['The service runs in one region; there is no cross-region replication or failover.'],
  },
  {
    id: 'inconsistent_state_recovery',
    proof_id: 'GAP-005',
    name: 'Recovery from inconsistent configuration state',
    description: 'Automatic reconciliation when desired and observed state diverge.',
    implementation: [],
    proofs: [],
    otherwise: 'not_claimed',
    non_claims: ['Re-applying the desired state is the recommended approach.'],
  },
  {
    id: 'dedicated_receive_ips',
    proof_id: 'GAP-006',
    name: 'Dedicated receive IPs',
    description: 'Dedicated inbound addresses for Business plans and above.',
    implementation: [],
    proofs: [],
    otherwise: 'planned',
    non_claims: ['The plan gate exists; no dedicated addresses are provisioned.'],
  },
];
