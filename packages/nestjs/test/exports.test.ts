/** @floodgate/nestjs's public surface: the names its entry exports, values and types. */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import ts from 'typescript';
import * as entry from '../src/index.js';

const VALUES = [
  'DECISION_PROPERTY',
  'FORBIDDEN',
  'LoadShedderGuard',
  'RATE_LIMIT_CONFIG',
  'RATE_LIMIT_OPTIONS',
  'RateLimit',
  'RateLimitDecision',
  'RateLimitException',
  'RateLimitExceptionFilter',
  'RateLimitForbiddenGraphQLError',
  'RateLimitGraphQLError',
  'RateLimitGuard',
  'RateLimitInterceptor',
  'RateLimitModule',
  'RateLimitService',
  'RateLimitStore',
  'ServiceOverloadedException',
  'SkipRateLimit',
  'TOO_MANY_REQUESTS',
  'connectionKey',
  'loadShedder',
];

const TYPES = [
  'LoadShedderOptions',
  'RateLimitAccessList',
  'RateLimitBody',
  'RateLimitCost',
  'RateLimitCount',
  'RateLimitDecisionView',
  'RateLimitKey',
  'RateLimitKeyFunction',
  'RateLimitLimitOptions',
  'RateLimitModuleAsyncOptions',
  'RateLimitModuleFactoryOptions',
  'RateLimitModuleOptions',
  'RateLimitOptions',
  'RateLimitOptionsFactory',
  'RateLimitPoliciesOptions',
  'RateLimitPolicyFunction',
  'RateLimitScope',
  'RateLimitTarget',
  'RateLimitTargetOptions',
  'RateLimitWindowOptions',
  'RouteLimit',
];

/** Every name `export { … }` / `export type { … }` in the entry lists. */
function exportedNames(): string[] {
  const file = join(__dirname, '../src/index.ts');
  const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest);
  return source.statements.flatMap((statement) =>
    ts.isExportDeclaration(statement) &&
    statement.exportClause &&
    ts.isNamedExports(statement.exportClause)
      ? statement.exportClause.elements.map((element) => element.name.text)
      : [],
  );
}

describe('@floodgate/nestjs exports', () => {
  it('the run-time values', () => {
    expect(Object.keys(entry).sort()).toEqual([...VALUES].sort());
  });

  it('the names of the entry, types included', () => {
    expect(exportedNames().sort()).toEqual([...VALUES, ...TYPES].sort());
  });
});
