// zpp's own exported C API (include/zpp/zpp.h): thin wrappers that catch everything.
#include <cstdio>

#include "config/config.h"
#include "epoch/step_epoch.h"
#include "epoch/training_pass.h"
#include "log/log.h"
#include "plugin/c_boundary.h"
#include "plugin/comm_registry.h"
#include "plugin/progress_line.h"
#include "plugin/stats_report.h"
#include "stats/stats.h"
#include "zpp/zpp.h"

extern "C" {

ZPP_API ncclResult_t zppGetVersion(int* version) {
  return zpp::CatchAll(__func__, [&] {
    ZPP_CHECK_ARG(version != nullptr,
                  "zppGetVersion: version is NULL; the call returns ncclInvalidArgument");
    *version = ZPP_VERSION_CODE;
    return ncclSuccess;
  });
}

ZPP_API ncclResult_t zppGetStats(zppStats_t* stats) {
  return zpp::CatchAll(__func__, [&] {
    ZPP_CHECK_ARG(stats != nullptr,
                  "zppGetStats: stats is NULL; the call returns ncclInvalidArgument");
    zpp::ProcessStats().Snapshot(stats);
    stats->step_epoch = zpp::ProcessStepEpoch().Current();
    stats->hpz_skipped_steps = zpp::ProcessStepEpoch().SkippedSteps();
    return ncclSuccess;
  });
}

ZPP_API ncclResult_t zppGetCommStats(ncclComm_t comm, zppStats_t* stats) {
  return zpp::CatchAll(__func__, [&] {
    ZPP_CHECK_ARG(stats != nullptr,
                  "zppGetCommStats: stats is NULL; the call returns ncclInvalidArgument");
    const auto state = zpp::plugin::Comms().Find(comm);
    ZPP_CHECK_ARG(state != nullptr,
                  "zppGetCommStats: communicator %p is not one zpp saw created; the call returns "
                  "ncclInvalidArgument (pass a live communicator made after libzpp.so was loaded, "
                  "or read zppGetStats for the process)",
                  static_cast<void*>(comm));
    state->stats.Snapshot(stats);
    stats->step_epoch = zpp::ProcessStepEpoch().Current();
    stats->hpz_skipped_steps = zpp::ProcessStepEpoch().SkippedSteps();
    return ncclSuccess;
  });
}

ZPP_API ncclResult_t zppGetPassThroughReasonName(int reason, const char** name) {
  return zpp::CatchAll(__func__, [&] {
    ZPP_CHECK_ARG(
        name != nullptr,
        "zppGetPassThroughReasonName: name is NULL; the call returns ncclInvalidArgument");
    const char* found = zpp::PassThroughReasonName(reason);
    ZPP_CHECK_ARG(
        found != nullptr,
        "zppGetPassThroughReasonName: unknown reason %d; the call returns ncclInvalidArgument "
        "(reasons run from 0 to zppNumReasons - 1)",
        reason);
    *name = found;
    return ncclSuccess;
  });
}

ZPP_API ncclResult_t zppStepEpochAdvance(uint64_t* epoch) {
  return zpp::CatchAll(__func__, [&] {
    const uint64_t now = zpp::ProcessStepEpoch().Advance();
    ZPP_TRACE(kStats, "step epoch advanced to %llu", static_cast<unsigned long long>(now));
    if (zpp::plugin::ProgressDue(now, static_cast<uint64_t>(zpp::GetConfig().progress))) {
      const auto rows = zpp::plugin::NcclCommRows();
      if (zpp::plugin::SpeaksForJob(rows)) {
        std::fprintf(stderr, "%s\n", zpp::plugin::FormatProgressLine(now, rows).c_str());
      }
    }
    if (epoch != nullptr) *epoch = now;
    return ncclSuccess;
  });
}

ZPP_API ncclResult_t zppGetStepEpoch(uint64_t* epoch) {
  return zpp::CatchAll(__func__, [&] {
    ZPP_CHECK_ARG(epoch != nullptr,
                  "zppGetStepEpoch: epoch is NULL; the call returns ncclInvalidArgument");
    *epoch = zpp::ProcessStepEpoch().Current();
    return ncclSuccess;
  });
}

ZPP_API ncclResult_t zppSetTrainingPass(int pass) {
  return zpp::CatchAll(__func__, [&] {
    ZPP_CHECK_ARG(pass == zppPassUnknown || pass == zppPassForward || pass == zppPassBackward,
                  "zppSetTrainingPass: unknown pass %d; the call returns ncclInvalidArgument "
                  "(zppPassUnknown, zppPassForward or zppPassBackward)",
                  pass);
    zpp::SetThreadTrainingPass(static_cast<zpp::TrainingPass>(pass));
    return ncclSuccess;
  });
}

ZPP_API ncclResult_t zppGetTrainingPass(int* pass) {
  return zpp::CatchAll(__func__, [&] {
    ZPP_CHECK_ARG(pass != nullptr,
                  "zppGetTrainingPass: pass is NULL; the call returns ncclInvalidArgument");
    *pass = static_cast<int>(zpp::CallerTrainingPass());
    return ncclSuccess;
  });
}

ZPP_API ncclResult_t zppHpzChecks(int* enabled, uint64_t* failures, uint64_t* choices) {
  return zpp::CatchAll(__func__, [&] {
    ZPP_CHECK_ARG(enabled != nullptr && failures != nullptr && choices != nullptr,
                  "zppHpzChecks: NULL output; the call returns ncclInvalidArgument");
    *enabled = 0;
    *failures = *choices = 0;
    for (const auto& state : zpp::plugin::Comms().Live()) {
      const auto zpp = state->Zpp();
      if (zpp == nullptr) continue;
      uint64_t comm_failures = 0, comm_choices = 0;
      if (zpp->ReadHpzChecks(&comm_failures, &comm_choices)) *enabled = 1;
      *failures += comm_failures;
      *choices += comm_choices;
    }
    return ncclSuccess;
  });
}

ZPP_API ncclResult_t zppHpzStepSkipped(uint64_t step, uint64_t failures) {
  return zpp::CatchAll(__func__, [&] {
    zpp::ProcessStepEpoch().CountSkippedStep();
    ZPP_WARN(
        "hpZ: optimizer step %llu skipped on every rank (its gradients dropped, the weights "
        "unchanged): %llu hpZ check(s) failed in it, so some gathers held NaN or a stale shard; "
        "reuse goes on from the next step",
        static_cast<unsigned long long>(step), static_cast<unsigned long long>(failures));
    return ncclSuccess;
  });
}

}  // extern "C"
