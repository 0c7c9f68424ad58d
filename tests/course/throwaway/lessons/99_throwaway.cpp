// Lesson 99 -- a throw-away lesson that tests/course/add_a_lesson.cmake adds to a copy of the
// course, to prove that a lesson is its files plus one course.json entry. Not part of the course.
#include "headwise/lesson/lesson.hpp"

using namespace headwise;

int main(int argc, char** argv) {
    lesson::App app{"Lesson 99: a throw-away lesson", "99_throwaway"};
    cli::LessonOptions opt;
    cli::add_lesson_options(app, opt, "batch,seq,d-model,seed");
    return lesson::run(app, argc, argv, [&] {
        const Tracer trace(!opt.quiet);
        Random rng(opt.seed);
        trace.section("step 1: an input and three times it");
        const Tensor3 x = rng.normal<3>({opt.dims.batch, opt.dims.seq, opt.dims.d_model});  // (B, N, d_model)
        const Tensor3 y = 3.0f * x;                                                        // (B, N, d_model)
        trace("x", x, "B, N, d_model");
        trace("y = 3 x", y, "B, N, d_model");
        return cli::exit_ok;
    });
}
