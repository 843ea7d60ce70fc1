-- The root of the `ClampAI` library: building it checks every specification and proof.
import ClampAI.Spec.Budget
import ClampAI.Spec.Kernel
import ClampAI.Thm
