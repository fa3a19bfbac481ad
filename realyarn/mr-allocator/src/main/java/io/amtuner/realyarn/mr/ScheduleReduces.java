package io.amtuner.realyarn.mr;

import static org.mockito.Mockito.doCallRealMethod;
import static org.mockito.Mockito.doReturn;
import static org.mockito.Mockito.mock;
import static org.mockito.Mockito.mockingDetails;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.nio.charset.StandardCharsets;
import java.util.EnumSet;
import java.util.List;
import java.util.StringJoiner;
import org.apache.hadoop.mapreduce.v2.app.rm.RMContainerAllocator;
import org.apache.hadoop.yarn.api.records.Resource;
import org.apache.hadoop.yarn.proto.YarnServiceProtos.SchedulerResourceTypes;
import org.mockito.invocation.Invocation;

/**
 * Hadoop's own {@code RMContainerAllocator.scheduleReduces} as an oracle: what a MapReduce AM
 * does with its reduces at one heartbeat, for the counts and resources on each stdin line.
 *
 * <p>The allocator is a Mockito mock whose {@code scheduleReduces} is the real method, as
 * Hadoop's {@code TestRMContainerAllocator} calls it: what it reads of the AM's state (the
 * headroom, the resource limit, whether reduces have started, the scheduler's resource types)
 * is stubbed from the line, and what it does (schedule every reduce, ramp up or down by n,
 * start reduces) is read back from the mock's invocations.
 *
 * <p>In: {@code totalMaps completedMaps scheduledMaps scheduledReduces assignedMaps
 * assignedReduces mapMB mapVcores reduceMB reduceVcores pendingReduces rampupLimit slowstart
 * started headroomMB headroomVcores cpu} (started and cpu 0 or 1). Out, one line per case:
 * {@code started=0|1} then {@code all}, {@code up N}, {@code down N} or {@code none}.
 */
public final class ScheduleReduces {
  private ScheduleReduces() {}

  public static void main(String[] args) throws Exception {
    PrintStream out = new PrintStream(System.out, true, StandardCharsets.UTF_8);
    BufferedReader in =
        new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    for (String line = in.readLine(); line != null; line = in.readLine()) {
      if (!line.isBlank()) {
        out.println(decide(line.trim().split("\\s+")));
      }
    }
  }

  static String decide(String[] f) throws ReflectiveOperationException {
    if (f.length != 17) {
      throw new IllegalArgumentException("expected 17 fields, got " + f.length);
    }
    int totalMaps = Integer.parseInt(f[0]);
    int completedMaps = Integer.parseInt(f[1]);
    int scheduledMaps = Integer.parseInt(f[2]);
    int scheduledReduces = Integer.parseInt(f[3]);
    int assignedMaps = Integer.parseInt(f[4]);
    int assignedReduces = Integer.parseInt(f[5]);
    Resource map = Resource.newInstance(Long.parseLong(f[6]), Integer.parseInt(f[7]));
    Resource reduce = Resource.newInstance(Long.parseLong(f[8]), Integer.parseInt(f[9]));
    int pendingReduces = Integer.parseInt(f[10]);
    float rampup = Float.parseFloat(f[11]);
    float slowstart = Float.parseFloat(f[12]);
    boolean started = f[13].equals("1");
    Resource headroom = Resource.newInstance(Long.parseLong(f[14]), Integer.parseInt(f[15]));
    EnumSet<SchedulerResourceTypes> types =
        f[16].equals("1")
            ? EnumSet.of(SchedulerResourceTypes.MEMORY, SchedulerResourceTypes.CPU)
            : EnumSet.of(SchedulerResourceTypes.MEMORY);
    // getResourceLimit: the headroom plus what the AM holds, as RMContainerAllocator sums it.
    Resource limit =
        Resource.newInstance(
            headroom.getMemorySize()
                + map.getMemorySize() * assignedMaps
                + reduce.getMemorySize() * assignedReduces,
            headroom.getVirtualCores()
                + map.getVirtualCores() * assignedMaps
                + reduce.getVirtualCores() * assignedReduces);

    RMContainerAllocator allocator = mock(RMContainerAllocator.class);
    stub(allocator, "getAvailableResources", headroom);
    stub(allocator, "getResourceLimit", limit);
    stub(allocator, "getIsReduceStarted", started);
    stub(allocator, "getSchedulerResourceTypes", types);
    doCallRealMethod()
        .when(allocator)
        .scheduleReduces(
            totalMaps, completedMaps, scheduledMaps, scheduledReduces, assignedMaps,
            assignedReduces, map, reduce, pendingReduces, rampup, slowstart);

    allocator.scheduleReduces(
        totalMaps, completedMaps, scheduledMaps, scheduledReduces, assignedMaps,
        assignedReduces, map, reduce, pendingReduces, rampup, slowstart);
    return outcome(mockingDetails(allocator).getInvocations(), started);
  }

  /** Stub a no-argument method of any visibility declared by the allocator or its parents. */
  private static void stub(RMContainerAllocator allocator, String name, Object value)
      throws ReflectiveOperationException {
    Method method = find(name);
    method.setAccessible(true);
    try {
      method.invoke(doReturn(value).when(allocator));
    } catch (InvocationTargetException e) {
      throw new IllegalStateException("stubbing " + name, e.getCause());
    }
  }

  private static Method find(String name) throws NoSuchMethodException {
    for (Class<?> c = RMContainerAllocator.class; c != null; c = c.getSuperclass()) {
      for (Method m : c.getDeclaredMethods()) {
        if (m.getName().equals(name) && m.getParameterCount() == 0) {
          return m;
        }
      }
    }
    throw new NoSuchMethodException(name);
  }

  private static String outcome(java.util.Collection<Invocation> calls, boolean started) {
    boolean nowStarted = started;
    StringJoiner acts = new StringJoiner(" ");
    for (Invocation call : calls) {
      List<Object> args = List.of(call.getArguments());
      switch (call.getMethod().getName()) {
        case "setIsReduceStarted" -> nowStarted = (Boolean) args.get(0);
        case "scheduleAllReduces" -> acts.add("all");
        case "rampUpReduces" -> acts.add("up " + args.get(0));
        case "rampDownReduces" -> acts.add("down " + args.get(0));
        default -> { }
      }
    }
    String act = acts.length() == 0 ? "none" : acts.toString();
    return "started=" + (nowStarted ? 1 : 0) + " " + act;
  }
}
