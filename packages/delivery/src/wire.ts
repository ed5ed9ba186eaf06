// The part of @hookline/delivery without database code, for the edge agent
// (`@hookline/delivery/src/wire`): its bundle stays free of pg and Prisma.
export * from './edge-protocol';
export { ERROR_KINDS, isSuccess, type ErrorKind, type SendResult } from './send-result';
export { errorKindOf, errorMessage } from './error-kind';
export { HEADERS_OF_INTEREST, pickHeaders, readLimited, truncateBody, basicAuth } from './response-reading';
