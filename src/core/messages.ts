// Error message texts in our own words, English and German. `{name}` placeholders are filled from
// the error's params. A code without a German text falls back to English (and says so with
// Content-Language: en).
import type { ApiError, ErrorCode, ErrorParams } from './errors.js';

export type Lang = 'en' | 'de';

const EN: Record<ErrorCode, string> = {
  Internal: 'Something went wrong on our side. Please retry later; if it persists, report error id {id}.',
  NotFound: 'There is nothing at this address.',
  FeatureUnsupported: 'This back-end does not offer this endpoint.',
  InfrastructureMaintenance: 'The service is down for maintenance. Please retry later.',
  InfrastructureBusy: 'The service is too busy right now. Please retry later.',
  UnsupportedApiVersion: "API version '{version}' is not served here. See the well-known document for the versions we serve.",
  RequestTimeout: 'The request took too long and was stopped.',
  BudgetInvalid: 'The budget is too low for this request.',
  EstimateComplexity: 'No estimate can be given for this process.',
  NoDataForUpdate: 'The update names nothing to change.',
  PropertyNotEditable: "The property '{property}' cannot be changed.",
  CollectionNotFound: "There is no collection '{identifier}'.",
  StorageFailure: 'The file could not be stored because of a server fault.',
  StorageQuotaExceeded: 'Your storage quota would be exceeded. Delete files to make room.',
  FileNotFound: "There is no file '{file}'.",
  FilePathInvalid: 'The file path is not valid: {reason}',
  FileOperationUnsupported: 'This operation is not possible on this path.',
  FolderOperationUnsupported: 'This operation works on files only, not on folders.',
  ContentTypeInvalid: 'This media type is not accepted. Accepted: {types}',
  FileTypeInvalid: 'The file format {type} is not accepted. Accepted: {types}',
  FileSizeExceeded: 'The file is too large. The largest accepted size is {size} bytes.',
  FileContentInvalid: 'The file content is not valid.',
  FileLocked: "The file '{file}' is in use by another operation.",
  ProcessGraphNotFound: "There is no user-defined process '{identifier}'.",
  ProcessInvalid: 'The process is not valid: {reason}',
  ProcessGraphMissing: 'The request holds no process graph.',
  ProcessGraphInvalid: 'The process graph is not valid: {reason}',
  PredefinedProcessExists: "'{identifier}' is the id of a predefined process; choose another id.",
  ProcessGraphComplexity: 'This process is too large for synchronous processing; run it as a batch job.',
  ProcessUnsupported: "There is no process '{process}' in namespace '{namespace}'.",
  ProcessParameterUnsupported: "Process '{process}' has no parameter '{parameter}'.",
  ProcessParameterInvalid: "The value of parameter '{parameter}' of process '{process}' is not valid: {reason}",
  ProcessParameterRequired: "Process '{process}' needs a value for parameter '{parameter}'.",
  JobNotFound: "There is no batch job '{identifier}'.",
  JobLocked: 'The batch job is queued or running and cannot be changed now.',
  JobNotFinished: 'The batch job has not finished yet. Please try again later.',
  JobNotStarted: 'The batch job has not been started.',
  ResultLinkExpired: 'This result link has expired. Request the job results again for a fresh link.',
  PaymentRequired: 'The budget does not cover this request.',
  BillingPlanInvalid: 'There is no such billing plan.',
  BillingPlanMissing: 'Please name a billing plan.',
  AuthenticationRequired: 'Please authenticate: this endpoint needs a bearer token.',
  AuthenticationSchemeInvalid: 'This authentication method is not supported here.',
  TokenInvalid: 'The token is invalid or has expired. Please authenticate again.',
  CredentialsInvalid: 'The user name or password is wrong.',
  PermissionsInsufficient: 'Your account may not access this resource.',
  ServiceNotFound: "There is no service '{identifier}'.",
  ServiceUnsupported: "The service type '{type}' is not offered.",
  ServiceConfigUnsupported: "The service has no configuration parameter '{parameter}'.",
  ServiceConfigInvalid: "The value of service parameter '{parameter}' is not valid: {reason}",
  ServiceConfigRequired: "The service needs a value for '{parameter}'.",
  TileInvalid: 'There is no tile {tile}: {reason}',
  JsonInvalid: 'The request body is not valid JSON: {reason}',
  BodyMissing: 'This request needs a body.',
  PayloadTooLarge: 'The request body is larger than the limit of {limit} bytes.',
  MethodNotAllowed: 'Method {method} is not allowed here. Allowed: {allowed}',
  QueryParameterInvalid: "The query parameter '{parameter}' is not valid: {reason}",
  HeaderInvalid: "The header '{header}' is not valid: {reason}",
  PathInvalid: 'The request path is not valid: {reason}',
  ClientClosedRequest: 'The client closed the request before its answer was ready.',
  ProcessParameterMissing: "No value and no default for the process parameter '{parameter}'.",
  PropertyInvalid: "The value of '{property}' is not valid: {reason}",
  RangeNotSatisfiable: 'The requested byte range lies beyond the end of the file ({size} bytes).',
  IdentityProviderUnavailable: "The identity provider '{provider}' cannot be reached to check the token. Please retry later.",
  TooManyRequests: 'You already run {running} computations at a time, the most allowed. Wait for one to finish, or use a batch job.',
  JobQuotaExceeded: 'You keep {jobs} batch jobs, the most allowed. Delete jobs you no longer need to create new ones.',
  CollectionUnavailable: "The STAC API behind collection '{identifier}' cannot be used at the moment. Please try again later.",
  UdfFailed: 'The user-defined function failed: {reason}',
  UdfInvalid: 'The user-defined function cannot be run: {reason}',
  ProcessingParameterInvalid: "The value of processing parameter '{parameter}' is not valid: {reason}",
  ProcessNamespaceInvalid: "The namespace '{namespace}' of process '{process}' cannot be used: {reason}",
};

/** German texts for the messages users meet most. */
const DE: Partial<Record<ErrorCode, string>> = {
  Internal: 'Bei uns ist ein Fehler aufgetreten. Bitte später erneut versuchen; wenn er bleibt, Fehler-ID {id} melden.',
  NotFound: 'Unter dieser Adresse gibt es nichts.',
  FeatureUnsupported: 'Dieser Endpunkt wird von diesem Back-End nicht angeboten.',
  InfrastructureBusy: 'Der Dienst ist gerade ausgelastet. Bitte später erneut versuchen.',
  UnsupportedApiVersion: "Die API-Version '{version}' wird hier nicht angeboten. Das Well-known-Dokument nennt die angebotenen Versionen.",
  NoDataForUpdate: 'Die Änderung nennt nichts, was geändert werden soll.',
  PropertyNotEditable: "Die Eigenschaft '{property}' kann nicht geändert werden.",
  CollectionNotFound: "Es gibt keine Collection '{identifier}'.",
  StorageQuotaExceeded: 'Ihr Speicherkontingent würde überschritten. Löschen Sie Dateien, um Platz zu schaffen.',
  FileNotFound: "Es gibt keine Datei '{file}'.",
  FilePathInvalid: 'Der Dateipfad ist ungültig: {reason}',
  FileOperationUnsupported: 'Dieser Vorgang ist für diesen Pfad nicht möglich.',
  ProcessGraphNotFound: "Es gibt keinen benutzerdefinierten Prozess '{identifier}'.",
  ProcessInvalid: 'Der Prozess ist ungültig: {reason}',
  ProcessGraphMissing: 'Die Anfrage enthält keinen Prozessgraphen.',
  ProcessGraphInvalid: 'Der Prozessgraph ist ungültig: {reason}',
  ProcessUnsupported: "Es gibt keinen Prozess '{process}' im Namensraum '{namespace}'.",
  JobNotFound: "Es gibt keinen Batch-Job '{identifier}'.",
  ServiceNotFound: "Es gibt keinen Dienst '{identifier}'.",
  AuthenticationRequired: 'Bitte authentifizieren: Dieser Endpunkt braucht ein Bearer-Token.',
  AuthenticationSchemeInvalid: 'Diese Authentifizierungsmethode wird hier nicht unterstützt.',
  TokenInvalid: 'Das Token ist ungültig oder abgelaufen. Bitte erneut authentifizieren.',
  CredentialsInvalid: 'Benutzername oder Passwort ist falsch.',
  PermissionsInsufficient: 'Ihr Konto darf auf diese Ressource nicht zugreifen.',
  JsonInvalid: 'Der Anfrageinhalt ist kein gültiges JSON: {reason}',
  BodyMissing: 'Diese Anfrage braucht einen Inhalt.',
  PayloadTooLarge: 'Der Anfrageinhalt ist größer als die Grenze von {limit} Bytes.',
  MethodNotAllowed: 'Die Methode {method} ist hier nicht erlaubt. Erlaubt: {allowed}',
  QueryParameterInvalid: "Der Query-Parameter '{parameter}' ist ungültig: {reason}",
  UdfFailed: 'Die benutzerdefinierte Funktion ist fehlgeschlagen: {reason}',
  UdfInvalid: 'Die benutzerdefinierte Funktion kann nicht ausgeführt werden: {reason}',
};

/** Picks the best supported language from an Accept-Language header (RFC 9110 q-values). */
export function pickLanguage(header: string | undefined): Lang {
  if (!header) return 'en';
  let best: Lang = 'en';
  let bestQ = -1;
  for (const part of header.split(',')) {
    const [tag, ...attrs] = part.trim().split(';');
    const primary = tag.trim().toLowerCase().split('-')[0];
    let q = 1;
    for (const a of attrs) {
      const m = /^\s*q=([0-9.]+)\s*$/i.exec(a);
      if (m) q = Number(m[1]);
    }
    if (!(q > 0)) continue;
    const lang: Lang | null = primary === 'de' ? 'de' : primary === 'en' ? 'en' : primary === '*' ? 'en' : null;
    if (lang && q > bestQ) {
      best = lang;
      bestQ = q;
    }
  }
  return best;
}

export function renderMessage(code: ErrorCode | string, params: ErrorParams, lang: Lang): { text: string; lang: Lang } {
  const de = lang === 'de' ? DE[code as ErrorCode] : undefined;
  const template = de ?? EN[code as ErrorCode] ?? code;
  const text = template.replace(/\{(\w+)\}/g, (m, name) => (name in params ? String(params[name]) : m));
  return { text, lang: de ? 'de' : 'en' };
}

/** What an error says: its own detail (English) when it has one, else the catalogue's template. */
export function messageOf(e: ApiError, lang: Lang, extra: ErrorParams = {}): { text: string; lang: Lang } {
  return e.detail ? { text: e.detail, lang: 'en' } : renderMessage(e.code, { ...e.params, ...extra }, lang);
}
