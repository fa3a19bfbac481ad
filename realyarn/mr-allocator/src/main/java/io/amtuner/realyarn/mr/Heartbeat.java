package io.amtuner.realyarn.mr;

import static org.mockito.Mockito.doCallRealMethod;
import static org.mockito.Mockito.doReturn;
import static org.mockito.Mockito.mock;
import static org.mockito.Mockito.mockingDetails;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.lang.reflect.Field;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.nio.charset.StandardCharsets;
import java.util.Collection;
import java.util.EnumSet;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.StringJoiner;
import org.apache.hadoop.mapreduce.v2.api.records.TaskAttemptId;
import org.apache.hadoop.mapreduce.v2.app.rm.RMContainerAllocator;
import org.apache.hadoop.yarn.api.records.Container;
import org.apache.hadoop.yarn.api.records.Resource;
import org.apache.hadoop.yarn.proto.YarnServiceProtos.SchedulerResourceTypes;
import org.apache.hadoop.yarn.util.Clock;
import org.mockito.invocation.Invocation;

/**
 * The reduce part of Hadoop's own {@code RMContainerAllocator.heartbeat} as an oracle: what a
 * MapReduce AM does with its reduces at one heartbeat, for the counts and resources on each
 * stdin line. As the AM does, it asks {@code preemptReducesIfNeeded} first and, only when that
 * preempted nothing, {@code scheduleReduces}.
 *
 * <p>The allocator is a Mockito mock (as Hadoop's {@code TestRMContainerAllocator} makes one)
 * running the real {@code preemptReducesIfNeeded}, {@code getResourceLimit} and {@code
 * scheduleReduces} on state set from the line: its asks, the preemption limits and delays at
 * their defaults, its request tables holding as many maps and reduces as the line says (every
 * waiting map asked for the same time ago, as a job's maps are asked at once), the headroom and
 * resource types stubbed. What they do (withdraw or add reduce asks, kill held reduces, start
 * reduces) is read back from the mocks' invocations.
 *
 * <p>In: {@code totalMaps completedMaps scheduledMaps scheduledReduces assignedMaps
 * assignedReduces mapMB mapVcores reduceMB reduceVcores pendingReduces rampupLimit slowstart
 * started headroomMB headroomVcores cpu mapsWaitedMs} (started and cpu 0 or 1). Out, one line
 * per case: {@code started=0|1} then the acts in order, each {@code preempt N}, {@code all},
 * {@code up N} or {@code down N}, or {@code none}.
 */
public final class Heartbeat {
  private static final String RM = "org.apache.hadoop.mapreduce.v2.app.rm.";
  private static final long NOW_MS = 1_000_000_000L;
  private static final float PREEMPTION_LIMIT = 0.5f;
  private static final long UNCONDITIONAL_PREEMPT_DELAY_MS = 300_000L;

  private Heartbeat() {}

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
    if (f.length != 18) {
      throw new IllegalArgumentException("expected 18 fields, got " + f.length);
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
    long mapsAskedAtMs = NOW_MS - Long.parseLong(f[17]);

    RMContainerAllocator allocator = mock(RMContainerAllocator.class);
    set(allocator, "mapResourceRequest", map);
    set(allocator, "reduceResourceRequest", reduce);
    set(allocator, "maxReducePreemptionLimit", PREEMPTION_LIMIT);
    set(allocator, "reducerUnconditionalPreemptionDelayMs", UNCONDITIONAL_PREEMPT_DELAY_MS);
    set(allocator, "reducerNoHeadroomPreemptionDelayMs", 0L);
    Clock clock = mock(Clock.class);
    doReturn(NOW_MS).when(clock).getTime();
    set(allocator, "clock", clock);

    Object assigned = mock(Class.forName(RM + "RMContainerAllocator$AssignedRequests"));
    set(assigned, "maps", entries(assignedMaps, null));
    set(assigned, "reduces", entries(assignedReduces, null));
    set(allocator, "assignedRequests", assigned);
    Object scheduled = mock(Class.forName(RM + "RMContainerAllocator$ScheduledRequests"));
    set(scheduled, "maps", entries(scheduledMaps, mapsAskedAtMs));
    set(scheduled, "reduces", entries(scheduledReduces, NOW_MS));
    set(allocator, "scheduledRequests", scheduled);

    stub(allocator, "getAvailableResources", headroom);
    stub(allocator, "getIsReduceStarted", started);
    stub(allocator, "getSchedulerResourceTypes", types);
    realMethod(allocator, "getResourceLimit");
    Method preempt = realMethod(allocator, "preemptReducesIfNeeded");
    doCallRealMethod()
        .when(allocator)
        .scheduleReduces(
            totalMaps, completedMaps, scheduledMaps, scheduledReduces, assignedMaps,
            assignedReduces, map, reduce, pendingReduces, rampup, slowstart);

    if (!(Boolean) preempt.invoke(allocator)) {
      allocator.scheduleReduces(
          totalMaps, completedMaps, scheduledMaps, scheduledReduces, assignedMaps,
          assignedReduces, map, reduce, pendingReduces, rampup, slowstart);
    }
    return outcome(mockingDetails(allocator).getInvocations(),
        mockingDetails(assigned).getInvocations(), started);
  }

  /**
   * A request table of {@code n} entries: containers held ({@code askedAtMs} null) or requests
   * asked at {@code askedAtMs}. Only their number and ages are read.
   */
  private static Map<TaskAttemptId, Object> entries(int n, Long askedAtMs)
      throws ReflectiveOperationException {
    Map<TaskAttemptId, Object> table = new LinkedHashMap<>();
    for (int i = 0; i < n; i++) {
      Object value;
      if (askedAtMs == null) {
        value = mock(Container.class);
      } else {
        value = mock(Class.forName(RM + "RMContainerRequestor$ContainerRequest"));
        set(value, "requestTimeMs", askedAtMs);
      }
      table.put(mock(TaskAttemptId.class), value);
    }
    return table;
  }

  private static void set(Object target, String name, Object value)
      throws ReflectiveOperationException {
    for (Class<?> c = target.getClass(); c != null; c = c.getSuperclass()) {
      try {
        Field field = c.getDeclaredField(name);
        field.setAccessible(true);
        field.set(target, value);
        return;
      } catch (NoSuchFieldException e) {
        // declared further up
      }
    }
    throw new NoSuchFieldException(target.getClass().getName() + "." + name);
  }

  /** Stub a no-argument method of any visibility declared by the allocator or its parents. */
  private static void stub(RMContainerAllocator allocator, String name, Object value)
      throws ReflectiveOperationException {
    invoke(find(name), doReturn(value).when(allocator), name);
  }

  private static Method realMethod(RMContainerAllocator allocator, String name)
      throws ReflectiveOperationException {
    Method method = find(name);
    invoke(method, doCallRealMethod().when(allocator), name);
    return method;
  }

  private static void invoke(Method method, Object stubbing, String name)
      throws IllegalAccessException {
    try {
      method.invoke(stubbing);
    } catch (InvocationTargetException e) {
      throw new IllegalStateException("stubbing " + name, e.getCause());
    }
  }

  private static Method find(String name) throws NoSuchMethodException {
    for (Class<?> c = RMContainerAllocator.class; c != null; c = c.getSuperclass()) {
      for (Method m : c.getDeclaredMethods()) {
        if (m.getName().equals(name) && m.getParameterCount() == 0) {
          m.setAccessible(true);
          return m;
        }
      }
    }
    throw new NoSuchMethodException(name);
  }

  private static String outcome(
      Collection<Invocation> allocatorCalls, Collection<Invocation> assignedCalls,
      boolean started) {
    boolean nowStarted = started;
    StringJoiner acts = new StringJoiner(" ");
    for (Invocation call : assignedCalls) {
      if (call.getMethod().getName().equals("preemptReduce")) {
        acts.add("preempt " + call.getArguments()[0]);
      }
    }
    for (Invocation call : allocatorCalls) {
      Object[] args = call.getArguments();
      switch (call.getMethod().getName()) {
        case "setIsReduceStarted" -> nowStarted = (Boolean) args[0];
        case "scheduleAllReduces" -> acts.add("all");
        case "rampUpReduces" -> acts.add("up " + args[0]);
        case "rampDownReduces" -> acts.add("down " + args[0]);
        default -> { }
      }
    }
    String act = acts.length() == 0 ? "none" : acts.toString();
    return "started=" + (nowStarted ? 1 : 0) + " " + act;
  }
}
