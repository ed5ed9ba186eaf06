import type { Prisma } from '@hookline/db';

/** Row types of the tables the api reads (Prisma's generated models). */
export type Ingester = Prisma.IngesterModel;
export type Destination = Prisma.DestinationModel;
export type DeliveryFlow = Prisma.DeliveryFlowModel;
export type Event = Prisma.EventModel;
export type Delivery = Prisma.DeliveryModel;
export type DeliveryAttempt = Prisma.DeliveryAttemptModel;
export type IngestRejection = Prisma.IngestRejectionModel;
export type Cluster = Prisma.ClusterModel;
export type SavedPayload = Prisma.SavedPayloadModel;
export type ApiKey = Prisma.ApiKeyModel;
export type AuditLog = Prisma.AuditLogModel;
