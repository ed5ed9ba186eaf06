import { AppError } from './app-error';
import { ERRORS } from './catalog';

export interface ProblemDetails {
  type: string;
  title: string;
  status: number;
  detail: string;
  instance: string;
  [extra: string]: unknown;
}

let errorsBase = 'https://hookline.dev/errors';

/** The base URI under which error types live; set once from config at boot. */
export function setErrorsBase(base: string): void {
  errorsBase = base.replace(/\/$/, '');
}

/** Maps any thrown value to RFC 9457 problem details; unknown errors become 500. */
export function toProblem(err: unknown, requestId: string): { problem: ProblemDetails; headers: Record<string, string> } {
  if (err instanceof AppError) {
    const def = ERRORS[err.type];
    return {
      problem: { ...err.extras, type: `${errorsBase}/${err.type}`, title: def.title, status: def.status, detail: err.message, instance: requestId },
      headers: err.headers,
    };
  }
  const def = ERRORS['internal-error'];
  return {
    problem: { type: `${errorsBase}/internal-error`, title: def.title, status: 500, detail: `An unexpected error occurred. Quote request id ${requestId} to support.`, instance: requestId },
    headers: {},
  };
}
