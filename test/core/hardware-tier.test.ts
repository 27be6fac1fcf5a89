import assert from 'node:assert/strict';
import { checkHardwareTier, isProfessionalGpu, supportedHardwareTier } from '../../core/hardware-tier.js';

const device = (gpu: string | null, vram_gb: number) => ({ gpu, vram_gb, ram_gb: 32, cores: 8 });

describe('hardware tiers (docs/protocol.md §1.6)', () => {
  it('puts CPU-only devices and small GPUs in tier 1', () => {
    assert.equal(supportedHardwareTier(device(null, 0)), 1);
    assert.equal(supportedHardwareTier(device('Intel Iris Xe Graphics', 2)), 1);
    assert.equal(supportedHardwareTier(device('NVIDIA GeForce GTX 1650', 4)), 1);
  });

  it('puts an RTX 3060 (8 or 12 GB) or better gaming card in tier 2, also with 24–32 GB', () => {
    assert.equal(supportedHardwareTier(device('NVIDIA GeForce RTX 3060', 12)), 2);
    assert.equal(supportedHardwareTier(device('NVIDIA GeForce RTX 3060', 8)), 2);
    assert.equal(supportedHardwareTier(device('AMD Radeon RX 6700 XT', 12)), 2);
    assert.equal(supportedHardwareTier(device('NVIDIA GeForce RTX 4090', 24)), 2);
    assert.equal(supportedHardwareTier(device('NVIDIA GeForce RTX 5090', 32)), 2);
  });

  it('puts professional GPUs with 16 GB or more, and any GPU with 40 GB or more, in tier 3', () => {
    for (const gpu of ['NVIDIA A100-SXM4-80GB', 'NVIDIA H100 PCIe', 'NVIDIA L40S', 'Tesla T4', 'NVIDIA RTX A6000']) {
      assert.equal(supportedHardwareTier(device(gpu, 40)), 3, gpu);
    }
    assert.equal(supportedHardwareTier(device('NVIDIA RTX 6000 Ada Generation', 48)), 3);
    assert.equal(supportedHardwareTier(device('NVIDIA RTX 4000 SFF Ada Generation', 20)), 3);
    assert.equal(supportedHardwareTier(device('AMD Instinct MI300X', 192)), 3);
    assert.equal(supportedHardwareTier(device('Tesla T4', 16)), 3);
    assert.equal(supportedHardwareTier(device('Apple M2 Ultra', 128)), 3);
    // A professional name with little memory is not tier 3.
    assert.equal(supportedHardwareTier(device('NVIDIA RTX A2000', 6)), 1);
    assert.equal(supportedHardwareTier(device('NVIDIA RTX A2000', 12)), 2);
  });

  it('tells workstation RTX x000 cards from gaming RTX cards', () => {
    assert.equal(isProfessionalGpu('Quadro RTX 8000'), true);
    assert.equal(isProfessionalGpu('NVIDIA RTX 5000'), true);
    assert.equal(isProfessionalGpu('NVIDIA RTX PRO 6000 Blackwell'), true);
    assert.equal(isProfessionalGpu('NVIDIA GeForce RTX 4080'), false);
    assert.equal(isProfessionalGpu('NVIDIA GeForce RTX 3060 Ti'), false);
    assert.equal(isProfessionalGpu('AMD Radeon RX 7900 XTX'), false);
  });

  it('accepts a declared tier at or below what the hardware supports', () => {
    assert.deepEqual(checkHardwareTier(device('NVIDIA GeForce RTX 3060', 12), 2), { ok: true, value: 2 });
    assert.deepEqual(checkHardwareTier(device('NVIDIA H100', 80), 1), { ok: true, value: 1 });
  });

  it('refuses a declared tier above the hardware with invalid_worker', () => {
    const tier3 = checkHardwareTier(device('NVIDIA GeForce RTX 4090', 24), 3);
    assert.equal(tier3.ok, false);
    assert.equal(!tier3.ok && tier3.error, 'invalid_worker');
    assert.match(!tier3.ok ? tier3.detail : '', /supports tier 2/);
    const tier2 = checkHardwareTier(device(null, 0), 2);
    assert.equal(!tier2.ok && tier2.error, 'invalid_worker');
  });

  it('refuses VRAM declared without a GPU', () => {
    const result = checkHardwareTier(device(null, 24), 1);
    assert.equal(!result.ok && result.error, 'invalid_worker');
  });
});
