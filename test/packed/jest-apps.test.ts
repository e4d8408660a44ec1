/**
 * The packed packages inside other people's Jest setups, which load CommonJS:
 * - a `nest new`-shaped application (CommonJS, ts-jest, the default test/jest-e2e.json and
 *   e2e spec) limited by @floodgate/nestjs;
 * - a plain JavaScript Jest test of an Express app with @floodgate/express.
 * Each runs the project's own Jest in a child process.
 */
import { join } from 'node:path';
import { type PackedInstall, type PackedProject, packedInstall } from '../harness/packed';

let install: PackedInstall;

beforeAll(() => {
  install = packedInstall();
}, 240_000);

/** Runs the project's Jest (require(esm) off, as on Node 20.0–20.18); throws if it fails. */
function jest(project: PackedProject, args: string[]): void {
  const bin = join(install.dir, 'node_modules/jest/bin/jest.js');
  project.exec(process.execPath, [bin, '--ci', '--colors=false', ...args], {
    env: { ...process.env, NODE_OPTIONS: '--no-experimental-require-module' },
  });
}

// Files as `nest new` (Nest 11) writes them, with the app's controller limited by Floodgate.
const NEST_APP = {
  'package.json': JSON.stringify({ name: 'nest-app', private: true, license: 'UNLICENSED' }),
  'tsconfig.json': JSON.stringify({
    compilerOptions: {
      module: 'nodenext',
      moduleResolution: 'nodenext',
      resolvePackageJsonExports: true,
      esModuleInterop: true,
      isolatedModules: true,
      declaration: true,
      removeComments: true,
      emitDecoratorMetadata: true,
      experimentalDecorators: true,
      allowSyntheticDefaultImports: true,
      target: 'ES2023',
      sourceMap: true,
      outDir: './dist',
      baseUrl: './',
      incremental: true,
      skipLibCheck: true,
      strictNullChecks: true,
      forceConsistentCasingInFileNames: true,
      noImplicitAny: false,
      strictBindCallApply: false,
      noFallthroughCasesInSwitch: false,
    },
  }),
  'src/app.service.ts': `import { Injectable } from '@nestjs/common';

@Injectable()
export class AppService {
  getHello(): string {
    return 'Hello World!';
  }
}
`,
  'src/app.controller.ts': `import { Controller, Get } from '@nestjs/common';
import { RateLimit } from '@floodgate/nestjs';
import { AppService } from './app.service';

@Controller()
@RateLimit({ name: 'hello', limit: 2, window: '1m' })
export class AppController {
  constructor(private readonly appService: AppService) {}

  @Get()
  getHello(): string {
    return this.appService.getHello();
  }
}
`,
  'src/app.module.ts': `import { Module } from '@nestjs/common';
import { memoryStore } from '@floodgate/core';
import { RateLimitModule } from '@floodgate/nestjs';
import { AppController } from './app.controller';
import { AppService } from './app.service';

@Module({
  imports: [RateLimitModule.forRoot({ store: memoryStore(), global: true })],
  controllers: [AppController],
  providers: [AppService],
})
export class AppModule {}
`,
  'test/jest-e2e.json': JSON.stringify({
    moduleFileExtensions: ['js', 'json', 'ts'],
    rootDir: '.',
    testEnvironment: 'node',
    testRegex: '.e2e-spec.ts$',
    transform: { '^.+\\.(t|j)s$': 'ts-jest' },
  }),
  'test/app.e2e-spec.ts': `import { Test, TestingModule } from '@nestjs/testing';
import { INestApplication } from '@nestjs/common';
import request from 'supertest';
import { App } from 'supertest/types';
import { AppModule } from './../src/app.module';

describe('AppController (e2e)', () => {
  let app: INestApplication<App>;

  beforeEach(async () => {
    const moduleFixture: TestingModule = await Test.createTestingModule({
      imports: [AppModule],
    }).compile();

    app = moduleFixture.createNestApplication();
    await app.init();
  });

  afterEach(() => app.close());

  it('/ (GET)', async () => {
    await request(app.getHttpServer()).get('/').expect(200).expect('Hello World!');
    await request(app.getHttpServer()).get('/').expect(200).expect('RateLimit', /^"hello";r=0;/);
    await request(app.getHttpServer()).get('/').expect(429).expect('Content-Type', /json/);
  });
});
`,
};

test('a `nest new`-shaped CommonJS app passes its default Jest e2e test with @floodgate/nestjs', () => {
  const project = install.project('nest-app', NEST_APP);
  jest(project, ['--config', './test/jest-e2e.json']);
  project.remove();
});

test('a plain Jest (CommonJS) test of an Express app with @floodgate/express', () => {
  const project = install.project('express-jest', {
    'package.json': JSON.stringify({ name: 'express-jest', private: true }),
    'app.test.js': `const express = require('express');
const request = require('supertest');
const { fixedWindow } = require('@floodgate/core');
const { rateLimit } = require('@floodgate/express');

test('the third request in a minute is refused with a problem body', async () => {
  const app = express();
  app.use(rateLimit({ policies: fixedWindow({ name: 'm', limit: 2, window: '1m' }) }));
  app.get('/', (req, res) => res.json({ remaining: req.rateLimit.remaining }));
  await request(app).get('/').expect(200, { remaining: 1 });
  await request(app).get('/').expect(200, { remaining: 0 });
  const denied = await request(app).get('/').expect(429).expect('Content-Type', /problem\\+json/);
  expect(denied.body['violated-policies']).toEqual(['m']);
});
`,
  });
  jest(project, ['--rootDir', '.']);
  project.remove();
});
