(* Coq's Z and positive as zarith's arbitrary-precision integers, for coq/extract/Extract.v.
   Every arithmetic operation of the model is mapped to a function of this module. *)

type t = Z.t

let zero = Z.zero
let one = Z.one

(* Constructors of positive (xI, xO) and Z (Zpos, Zneg): only literals use them. *)
let double x = Z.shift_left x 1
let doubleplusone x = Z.succ (double x)
let pos x = x
let neg x = Z.neg x

(* Pattern matching on Z and positive, should the extracted code need it. *)
let zcase fz fp fn z =
  let s = Z.sign z in
  if s = 0 then fz () else if s > 0 then fp z else fn (Z.neg z)

let poscase fi fo fh p =
  if Z.equal p Z.one then fh ()
  else if Z.is_odd p then fi (Z.shift_right p 1)
  else fo (Z.shift_right p 1)

let add = Z.add
let sub = Z.sub
let mul = Z.mul

(* Coq's Z.div rounds towards minus infinity and gives 0 for a zero divisor. *)
let div a b = if Z.equal b Z.zero then Z.zero else Z.fdiv a b
let min = Z.min
let eqb = Z.equal
let leb = Z.leq
let ltb = Z.lt
