import { ERRORS, type ErrorType } from './catalog';

export interface FieldError {
  field: string;
  message: string;
}

/** An error with a catalog type; extras become extra problem-detail members. */
export class AppError extends Error {
  readonly status: number;
  constructor(
    readonly type: ErrorType,
    detail: string,
    readonly extras: Record<string, unknown> = {},
    readonly headers: Record<string, string> = {},
  ) {
    super(detail);
    this.name = 'AppError';
    this.status = ERRORS[type].status;
  }

  static validation(errors: FieldError[], detail = 'The request is invalid.'): AppError {
    return new AppError('validation-error', detail, { errors });
  }

  static notFound(what = 'resource'): AppError {
    return new AppError('not-found', `The ${what} does not exist or is not visible to this tenant.`);
  }
}
