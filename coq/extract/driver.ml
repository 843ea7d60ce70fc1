(* clampai_model: the extracted Coq model (model.ml) as a program. Reads one operation a line
   from stdin and answers each with one line on stdout (flushed), so a test can drive it
   operation by operation. Integers are decimal and unbounded. See coq/README.md.

   A task, then operations on it:
     task TOTAL MIN_COST MAX_STEPS|- N V0 .. V(N-1)   starts a task declaration (N variables)
     action COST EMERGENCY REVERSIBLE K (VAR s|i VALUE){K}   adds an action (flags 0 or 1)
     inv BOUND K (VAR COEF){K}                         adds a blocking invariant
     start                          -> state ...       the initial state of the task
     exec I                         -> exec APPROVED BELOW_MIN BUDGET STEP_LIMIT NV I{NV} STATE
     rollback                       -> rollback OK STATE
     drop                           -> state ...       forgets the last exec or rollback (the
                                                       test's resynchronisation when the C++
                                                       refused what it cannot represent)
   where STATE is N X0 .. X(N-1) GROSS REFUNDED STEPS EMERGENCY_STEPS.
   A ledger on its own:
     ledger TOTAL                   -> ledger TOTAL GROSS REFUNDED
     charge C | refund A            -> charge|refund OK TOTAL GROSS REFUNDED
     drop                           -> ledger ...      forgets the last charge or refund
   Budget pools (Pools.v): numbered levels (pools and tasks' own budgets), each a ledger, and
   operations on paths of levels (a task's own budget first, the root last):
     levels U N T0 .. T(N-1)        -> levels LEVELS   N levels at these totals, nothing spent;
                                                       U is "-" (the kernel) or the level K the
                                                       broken variant leaves unchecked
     pcharge C K I0 .. I(K-1)       -> pcharge OK AT LEVELS   apply_op (PCharge path C)
     prefund A K I0 .. I(K-1)       -> prefund OK AT LEVELS   apply_op (PRefund path A)
     ptotal I T                     -> ptotal OK AT LEVELS    apply_op (PSetTotal I T)
   where OK says whether the operation was accepted (a refused one changes nothing), AT is the
   position in the path of the first level that refused (charge_level, refund_level on what the
   earlier levels left; -1 when none did, 0 for a refused ptotal), and LEVELS is
   N (TOTAL GROSS REFUNDED){N}.
   A malformed line: "error <why>" and exit status 2. *)

(* zarith's Z, before Model's own module Z (the extracted one) hides it. *)
module Zi = Z

open Model

let fail why =
  print_string ("error " ^ why ^ "\n");
  exit 2

let int_of tok =
  try Zi.of_string tok with _ -> fail ("not an integer: " ^ tok)

let small_of tok =
  match int_of_string_opt tok with
  | Some n when n >= 0 -> n
  | _ -> fail ("not a non-negative count: " ^ tok)

let flag_of = function "0" -> false | "1" -> true | tok -> fail ("not a flag (0 or 1): " ^ tok)

(* The declaration being read, with its lists in reverse. *)
let total = ref Zi.zero
let min_cost = ref Zi.one
let max_steps = ref None
let init = ref []
let actions = ref []
let invariants = ref []
let task = ref None
let current = ref None
let previous = ref None
let ledger = ref (initial Zi.zero)
let previous_ledger = ref None

let pools = ref []
let unchecked = ref None

let the_task () = match !task with Some t -> t | None -> fail "no task started"
let the_state () = match !current with Some s -> s | None -> fail "no task started"

let rec take n toks what =
  if n = 0 then ([], toks)
  else
    match toks with
    | [] -> fail ("missing " ^ what)
    | t :: rest ->
        let got, left = take (n - 1) rest what in
        (t :: got, left)

let rec effects k toks =
  if k = 0 then ([], toks)
  else
    match toks with
    | var :: m :: value :: rest ->
        let mode = match m with "s" -> Assign | "i" -> Increment | _ -> fail ("bad mode " ^ m) in
        let e = { e_var = small_of var; e_mode = mode; e_value = int_of value } in
        let more, left = effects (k - 1) rest in
        (e :: more, left)
    | _ -> fail "missing effect"

let rec terms k toks =
  if k = 0 then ([], toks)
  else
    match toks with
    | var :: coef :: rest ->
        let more, left = terms (k - 1) rest in
        ((small_of var, int_of coef) :: more, left)
    | _ -> fail "missing term"

let no_more = function [] -> () | t :: _ -> fail ("unexpected " ^ t)

let buf = Buffer.create 256
let add_int z = Buffer.add_char buf ' '; Buffer.add_string buf (Zi.to_string z)
let add_flag b = Buffer.add_string buf (if b then " 1" else " 0")

let add_state s =
  add_int (Zi.of_int (List.length s.k_vars));
  List.iter add_int s.k_vars;
  add_int s.k_ledger.gross;
  add_int s.k_ledger.refunded;
  add_int s.k_steps;
  add_int s.k_emergency_steps

let add_ledger l = add_int l.total; add_int l.gross; add_int l.refunded

let add_levels ls =
  add_int (Zi.of_int (List.length ls));
  List.iter add_ledger ls

(* The path's levels as the model charges them: each level on what the earlier ones left. *)
let rec first_refusal step ls path at =
  match path with
  | [] -> -1
  | i :: rest -> (
      match step ls i with Some ls' -> first_refusal step ls' rest (at + 1) | None -> at)

let answer () =
  Buffer.add_char buf '\n';
  print_string (Buffer.contents buf);
  flush stdout;
  Buffer.clear buf

let move s =
  previous := !current;
  previous_ledger := None;
  current := Some s

let handle = function
  | [] -> ()
  | "task" :: t :: m :: ms :: n :: rest ->
      total := int_of t;
      min_cost := int_of m;
      max_steps := (if ms = "-" then None else Some (int_of ms));
      let values, left = take (small_of n) rest "initial value" in
      no_more left;
      init := List.map int_of values;
      actions := [];
      invariants := [];
      task := None;
      current := None
  | "action" :: cost :: e :: r :: k :: rest ->
      let effs, left = effects (small_of k) rest in
      no_more left;
      actions :=
        { a_cost = int_of cost; a_emergency = flag_of e; a_reversible = flag_of r;
          a_effects = effs } :: !actions
  | "inv" :: bound :: k :: rest ->
      let ts, left = terms (small_of k) rest in
      no_more left;
      invariants := { i_terms = ts; i_bound = int_of bound } :: !invariants
  | [ "start" ] ->
      let t =
        { t_total = !total; t_min_cost = !min_cost; t_max_steps = !max_steps; t_init = !init;
          t_actions = List.rev !actions; t_invariants = List.rev !invariants } in
      task := Some t;
      current := Some (initial_state t);
      previous := None;
      Buffer.add_string buf "state";
      add_state (the_state ());
      answer ()
  | [ "exec"; i ] ->
      let t = the_task () in
      let a =
        match List.nth_opt t.t_actions (small_of i) with
        | Some a -> a
        | None -> fail ("no action " ^ i)
      in
      let d, s = exec t (the_state ()) a in
      move s;
      Buffer.add_string buf "exec";
      add_flag (approved d);
      add_flag d.d_below_min_cost;
      add_flag d.d_budget_exceeded;
      add_flag d.d_step_limit;
      add_int (Zi.of_int (List.length d.d_violated));
      List.iter (fun i -> add_int (Zi.of_int i)) d.d_violated;
      add_state s;
      answer ()
  | [ "rollback" ] ->
      let s0 = the_state () in
      let ok, s = match rollback s0 with Some s -> (true, s) | None -> (false, s0) in
      move s;
      Buffer.add_string buf "rollback";
      add_flag ok;
      add_state s;
      answer ()
  | [ "drop" ] -> (
      match (!previous, !previous_ledger) with
      | Some s, _ ->
          current := Some s;
          previous := None;
          Buffer.add_string buf "state";
          add_state s;
          answer ()
      | None, Some l ->
          ledger := l;
          previous_ledger := None;
          Buffer.add_string buf "ledger";
          add_ledger l;
          answer ()
      | None, None -> fail "nothing to drop")
  | [ "ledger"; t ] ->
      ledger := initial (int_of t);
      previous := None;
      previous_ledger := None;
      Buffer.add_string buf "ledger";
      add_ledger !ledger;
      answer ()
  | [ ("charge" | "refund") as op; amount ] ->
      let result =
        if op = "charge" then try_charge !ledger (int_of amount)
        else try_refund !ledger (int_of amount)
      in
      previous := None;
      previous_ledger := Some !ledger;
      (match result with Some l -> ledger := l | None -> ());
      Buffer.add_string buf op;
      add_flag (result <> None);
      add_ledger !ledger;
      answer ()
  | "levels" :: u :: n :: rest ->
      let totals, left = take (small_of n) rest "level total" in
      no_more left;
      unchecked := (if u = "-" then None else Some (small_of u));
      pools := List.map (fun t -> initial (int_of t)) totals;
      Buffer.add_string buf "levels";
      add_levels !pools;
      answer ()
  | ("pcharge" | "prefund") as op :: amount :: k :: rest ->
      let path, left = take (small_of k) rest "level" in
      no_more left;
      let path = List.map small_of path in
      let a = int_of amount in
      let p, at =
        if op = "pcharge" then
          ( PCharge (path, a),
            first_refusal (fun ls i -> charge_level !unchecked ls i a) !pools path 0 )
        else (PRefund (path, a), first_refusal (fun ls i -> refund_path ls [ i ] a) !pools path 0)
      in
      let ok =
        match p with
        | PCharge (path, c) -> charge_path !unchecked !pools path c <> None
        | PRefund (path, r) -> refund_path !pools path r <> None
        | PSetTotal _ -> false
      in
      pools := apply_op !unchecked !pools p;
      Buffer.add_string buf op;
      add_flag ok;
      add_int (Zi.of_int at);
      add_levels !pools;
      answer ()
  | [ "ptotal"; i; t ] ->
      let i = small_of i and t = int_of t in
      let ok = set_total !pools i t <> None in
      pools := apply_op !unchecked !pools (PSetTotal (i, t));
      Buffer.add_string buf "ptotal";
      add_flag ok;
      add_int (Zi.of_int (if ok then -1 else 0));
      add_levels !pools;
      answer ()
  | tok :: _ -> fail ("unknown operation or wrong arity: " ^ tok)

let () =
  try
    while true do
      let line = input_line stdin in
      handle (List.filter (fun s -> s <> "") (String.split_on_char ' ' (String.trim line)))
    done
  with End_of_file -> ()
