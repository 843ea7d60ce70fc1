-- Every proof file. A new `ClampAI/Thm/<Concept>.lean` must be imported here.
import ClampAI.Thm.Budget
import ClampAI.Thm.Kernel
