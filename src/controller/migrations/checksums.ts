/**
 * SHA-256 of each migration file's source text, as it landed. A line is never edited: change a
 * schema with a new migration. `node scripts/migration-checksums.mjs --write` appends the line of a
 * new file and refuses a changed one; CI runs the same script without `--write`.
 */
export const MIGRATION_CHECKSUMS: Record<string, string> = {
  '1720000000000-CreateAuth.ts': 'c640527713bd00ac6366e0f307f0c374866612adcf47d80df0c1537f701f8645',
  '1730500000000-CreateDispatchers.ts': '02c6f90980ebc753299e2c4f8712fe145482651d7f4bbfa51537ae5bc732676a',
  '1730500000001-CreateTasks.ts': 'daa5777d44ae53e13117887d0ee20e1efaf188c036678f5848aa6f37df9f68aa',
  '1740000000000-CreateSkills.ts': 'f08ab966cac542891712ff22604612fd8353c7f3eaa6c55dd6fd3ec9a9f2e6d1',
  '1750700000000-CreateWorkflows.ts': '2e8d63a6d12c6a7b9cedb5c01f1ec20183f0f53bb89e01646d0c143d3b0ccd78',
  '1750700000001-CreateWebhookDeliveries.ts': '5f0d457e95127c1c211de8cf66670f8340a54964ea53cda144dbd2626f1e0fab',
  '1760000000000-TaskPipeline.ts': 'b862812c44d641c7b8d26e37d98943a3730ed85e5d75abdfbd597ae230c19e5e',
  '1770000000000-KeysetListIndexes.ts': '14fc65116781abef4fc5a84e91a1e01c39522477ed9ddf88db71b30389a2eb7d',
  '1770000000001-RetentionIndexes.ts': '00e66f2cc878319b31388cb9f82a94596f51fa58d79f154fb10624fe790b975b',
  '1780100000000-TaskIsolation.ts': 'acddc6eecad28b572891a758cc5efdbcafb62f71602b1de745052421596d3165',
  '1780200000000-CreateEvents.ts': '9e3ccc3ede0cd13ec684018ea73f0406e22da73ff7397356624eeb3da56fb4ce',
  '1780500000000-AddPodAdditions.ts': '47ddadebca8296874d3c5b25d4576c2e1234223f21a04bd11b3622ef27621743',
  '1790100000000-SchedulingQueue.ts': 'd16a08e7fb30d761b05b08c50a879ae575e9f629d67f84d42c0d61e6a01cd2ec',
  '1790200000000-TaskRetries.ts': 'da88a236d7384db7f0017d5560a298b3bc789a3de7b930a24d03e96d078c1423',
  '1790300000000-CreateScheduleTicks.ts': '3948ee82c1d9e2bd6ae99d1cadefaa2b573585ea4db6e988434db3905a3b0025',
  '1790600000000-LedgerFilterIndexes.ts': '8f09c0599b5dcc0ad27e3653d622e60d77a1c550f33b74779490c1b9ea3e9fac',
  '1790700000000-CreateSubscriptions.ts': '0c156d3ab3e70018fb0a8037fb93525a782129136a3e7728d08ea6cabab03fe7',
  '1790500000000-DispatcherBinding.ts': '8593c857641897f16c87185489982e8042f49927ea6ed4a808b4cde5b42bbabf',
  '1790500000001-AddSecretEnv.ts': '595ff2c25e1cb7eb9269ed2244df233232533d8a26c4beac503752a05a45ce12',
  '1790500000002-EventsByTask.ts': '08738f57a46ae0571b49d08744bb4fedcb1063562ad8d9a94e479c4302f5ecf5',
  '1790800000000-CreateAuditTrail.ts': '76acb5677f882e313a8a3d2ce317b753a624f4f7a02d09c992b93bc88077c764',
  '1790900000000-AddTraceContext.ts': '4600fe7eaaca16f2d684bc7bfcc95ed3b9dcbe558f8ec8856e4cca474439b446',
  '1791000000000-CreateStreamLeases.ts': 'f7378bb331c1091b19e2c3f884371ff45762a2503e6f81c9556e780b06da63f8',
  '1791000000001-TakeStreamLease.ts': '8e48af50f3d838bef9415f454d9d105826fd1fd6af7e223c71f260cc207a6a76',
  '1791100002600-AddDispatcherWarmPools.ts': '083fb2f866b5938e4ac09866f691ecee4b0e0e368583090f41f016a86d4152f3',
};
