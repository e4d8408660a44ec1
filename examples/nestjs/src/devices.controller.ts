/**
 * Device endpoints that third-party apps call. Every app (client id) gets 100 calls a minute
 * on each route; rebooting a device is stricter: 5 a minute and 20 an hour, checked and
 * charged together (a reboot denied by the hourly policy uses nothing of the per-minute one).
 */
import type { Decision } from '@floodgate/core';
import { fixedWindow } from '@floodgate/core';
import { RateLimit, RateLimitDecision } from '@floodgate/nestjs';
import { Controller, Get, HttpCode, NotFoundException, Param, Post } from '@nestjs/common';

export interface Device {
  id: string;
  model: string;
  online: boolean;
}

export const DEVICES: Device[] = [
  { id: 'thermo-1', model: 'Thermostat T3', online: true },
  { id: 'cam-7', model: 'Door camera C2', online: false },
];

@Controller('devices')
@RateLimit({ limit: 100, window: '1m', key: 'clientId' })
export class DevicesController {
  @Get()
  list(@RateLimitDecision() decision: Decision) {
    return { devices: DEVICES, callsLeftThisMinute: decision.remaining };
  }

  @Get(':id')
  get(@Param('id') id: string) {
    return findDevice(id);
  }

  @Post(':id/reboot')
  @HttpCode(202)
  @RateLimit({
    key: 'clientId',
    policies: [
      fixedWindow({ limit: 5, window: '1m', name: 'reboots-per-minute' }),
      fixedWindow({ limit: 20, window: '1h', name: 'reboots-per-hour' }),
    ],
  })
  reboot(@Param('id') id: string) {
    return { device: findDevice(id).id, status: 'rebooting' };
  }
}

function findDevice(id: string): Device {
  const device = DEVICES.find((d) => d.id === id);
  if (!device) throw new NotFoundException(`no device ${id}`);
  return device;
}
