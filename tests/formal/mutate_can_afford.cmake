# Writes OUT: the extracted model IN with can_afford's `cost <= remaining` turned into
# `cost < remaining`, for the test that shows model_differential can fail. Fails if the
# extracted text is not the expected one (the mutation must really happen).
file(READ "${IN}" text)
set(good "(Z.leb cost (Z.sub l.total (net l)))")
set(bad "(Z.ltb cost (Z.sub l.total (net l)))")
string(FIND "${text}" "${good}" at)
if(at EQUAL -1)
  message(FATAL_ERROR "mutate_can_afford: `${good}` is not in ${IN}: update the mutation")
endif()
string(REPLACE "${good}" "${bad}" mutated "${text}")
file(WRITE "${OUT}" "${mutated}")
