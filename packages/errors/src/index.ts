export { ERRORS, type ErrorType } from './catalog';
export { AppError, type FieldError } from './app-error';
export { toProblem, type ProblemDetails, setErrorsBase } from './problem';
