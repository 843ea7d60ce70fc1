(** Extraction of the model's decision, ledger operations, rollback and budget pools to OCaml, with Coq's
    integers as zarith's arbitrary-precision integers (big.ml). Run from coq/ after the theories
    are built: [coqc -Q theories ClampAI extract/Extract.v] writes model.ml and model.mli. *)

From Coq Require Import ZArith Extraction ExtrOcamlBasic ExtrOcamlNatInt.
From ClampAI Require Import Ledger Kernel Pools.

Extraction Language OCaml.

Extract Inductive positive => "Big.t"
  [ "Big.doubleplusone" "Big.double" "Big.one" ] "Big.poscase".
Extract Inductive Z => "Big.t" [ "Big.zero" "Big.pos" "Big.neg" ] "Big.zcase".

Extract Constant Z.add => "Big.add".
Extract Constant Z.sub => "Big.sub".
Extract Constant Z.mul => "Big.mul".
Extract Constant Z.div => "Big.div".
Extract Constant Z.min => "Big.min".
Extract Constant Z.eqb => "Big.eqb".
Extract Constant Z.leb => "Big.leb".
Extract Constant Z.ltb => "Big.ltb".

Extraction "model.ml"
  net can_afford can_refund try_charge try_refund initial
  approved decide exec rollback initial_state step_limit
  charge_level charge_path refund_path set_total apply_op run_ops.
