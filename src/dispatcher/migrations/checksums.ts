/**
 * SHA-256 of each migration file's source text, as it landed. A line is never edited: change a
 * schema with a new migration. `node scripts/migration-checksums.mjs --write` appends the line of a
 * new file and refuses a changed one; CI runs the same script without `--write`.
 */
export const MIGRATION_CHECKSUMS: Record<string, string> = {
  '1710000000000-CreateTasksAndCallbackOutbox.ts': '453e240a3957fa002cde8c48ad4081b7bd8529338ff0fa03533bef4949728146',
  '1710000000001-OrderPendingTasksByArrival.ts': '55119d8df4d2ea435e4d4439991e338fb99e0205489f924714d528fd79a93952',
  '1710000000002-AddRuntimeOwner.ts': '1c9a5dfd477c696af73d36b9f28bfbb4d9a87711e5ef240162bd781bd8625f1f',
  '1710000000003-AddCallbackClaimant.ts': 'f7b8de837a6b0dffa672364a83e459a29a57b56c4024700857a6146efae8a3db',
  '1710000000004-StatusListIndex.ts': 'f6ed7960de86f712a89d63a9b9e30e4fda980819291bd7170891923eaa1c2b5c',
  '1710000000005-RetentionIndex.ts': 'ebf7d44febf7545e68ada09be7b0e378c9074fb606a3845cf74b98eaa3dca574',
  '1710000000100-AddDispatcherReplicas.ts': 'ab2418adc12af74cad083527bb2909252a95f94f4c38a9206d3fb0eb83befdd7',
  '1710000000101-AddTaskClaimant.ts': '989a420d9077c10144067a38bbbd483742f36c811226388978ca9c6f9a6a2df1',
  '1710000000200-TaskSkillsAndIsolation.ts': 'cec3135c0d4080c50a917e5c92e73fe0b245736dbf9b6a7e1043cf16021ca745',
  '1710000000300-AddLogsStoredAt.ts': '83ea8fd7603e85fd3f3d123a49b086dfc3481835dd1a20860a672a3132bf60b9',
  '1710000000500-AddPodAdditions.ts': '7934a6dab23e018468a4278d1eab59cf5803d4976517e3081625e9895ae24952',
  '1710000000700-AddSecretEnv.ts': '9020cbe1ba3a10ff952f7edc0235e3abaac3d02a0b464fe7efa9c7070c907bc2',
  '1710000000900-AddTraceContext.ts': '11c6ca4143e219676cb1bf05e8ce8d1cb1b1924e70e6cab1afb456de74fe99d4',
  '1710000000800-AddWarmPools.ts': 'ec94d10d48c2d7c6fd18819191055cd583db296d98b575eccea0cfb4a36b198e',
};
