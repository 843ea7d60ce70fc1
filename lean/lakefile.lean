import Lake
open Lake DSL

-- Core Lean 4 only: no dependencies, so `lake build` works offline.
package clampai where
  -- add package configuration options here

-- `ClampAI.lean` imports every Spec and Thm module, so building the default target checks
-- every proof.
@[default_target]
lean_lib ClampAI where
  -- add library configuration options here
